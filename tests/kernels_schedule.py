"""Kernels for tests/engine/test_reverse_schedule.py: costly partials in both arms of a branch and inside
a dynamic loop (where they must stay in the reverse sweep)."""
import math

from numba import cuda


def branch_partials(out, x, y):
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        if u > 0.0:
            s = math.sin(u) / y[i]
        else:
            s = math.exp(u) * math.cos(y[i])
        out[i] = s


def loop_partials(out, x, n):
    i = cuda.grid(1)
    if i < x.shape[0]:
        a = x[i]
        for k in range(n):
            a = math.sin(a) + 0.5 * a
        out[i] = a / (1.0 + x[i] * x[i])
