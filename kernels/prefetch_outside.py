"""A thread-owned array stored in two blocks: the reverse sweep reverses the
second block first, which consumes and rewrites the shadow the first block's store then reads, so
the first block's shadow read cannot be issued early (emit_prefetch.py)."""
from numba import cuda


def store_then_update(y, x):
    i = cuda.grid(1)
    if i < y.shape[0]:
        y[i] = x[i] * x[i]
    if i < y.shape[0]:
        y[i] = y[i] * 3.0 + x[i]
