"""Reduced from fuzz-107-taichi-wrong-gradient (reverse-float32@taichi) by `harness fuzz --triage`: FAIL; failing dot, fd-reverse."""
from numba import cuda


def kernel(out, x, y, a, idx, n, acc, cnt):
    i = cuda.grid(1)
    if i < out.shape[0]:
        t3 = y[i]
        acc1 = 1.0
        for k2 in range(2):
            acc1 = acc1 + y[(i + 1) % 16]
        out[i] = y[i] + 0.5 * x[i] + 0.87 * acc1
