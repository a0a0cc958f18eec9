"""Reduced by `harness fuzz --triage` from seed 10 of `harness fuzz --engine bundled,warp,taichi` (reverse-float64@taichi, also @warp): ZERO; failing fd-reverse, zero."""
from numba import cuda


def kernel(x, idx, acc):
    i = cuda.grid(1)
    t1 = x[idx[i]]
    cuda.atomic.max(acc, i % 3, t1)
