"""Row sums of a transcendental over an inner loop, one row per thread: the log-sum-exp and softmax
shape. Taichi 1.7.4's adjoints of exp and tanh read the forward result, which an inner dynamic loop
keeps in one slot that every trip overwrites (cases/taichi-exp-in-inner-loop.yaml)."""
import math

from numba import cuda


@cuda.jit
def row_sum_exp(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for k in range(a.shape[1]):
            s += math.exp(a[i, k])
        out[i] = s


@cuda.jit
def row_sum_tanh(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for k in range(a.shape[1]):
            s += math.tanh(a[i, k])
        out[i] = s


@cuda.jit
def row_sum_sin(a, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for k in range(a.shape[1]):
            s += math.sin(a[i, k])
        out[i] = s
