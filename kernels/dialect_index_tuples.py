"""Indices held in tuple variables (`pos = (x, y)`, then `out[pos]`), as cuSignal's convolutions
write them: numba keeps the tuple as a value, the engine's front end splits it into one name per
component where it is only ever read as a whole index (harness/engine/frontend/desugar.py)."""
import numpy as np
from numba import cuda


@cuda.jit
def tuple_store_and_loads(out, a, w):
    """A tuple index for the store, and tuples rebuilt in a loop for the loads."""
    i, j = cuda.grid(2)
    here = (i, j)
    if i < out.shape[0] and j < out.shape[1]:
        acc = 0.0
        for k in range(3):
            src = (i + k, j)
            coef = (k,)
            acc += a[src] * w[coef]
        out[here] = acc


@cuda.jit
def tuple_casts_3d(out, a):
    """Components cast with numpy's int32 (cuSignal's `cp.int32(...)`), a 3-D tuple, and a tuple
    rebound on one path only."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        at = (np.int32(i), np.int32(0), np.int32(1))
        if a[i, 0, 0] > 0:
            at = (np.int32(i), np.int32(1), np.int32(0))
        out[i] = a[at] * a[i, 1, 1]


@cuda.jit
def tuple_augmented(out, a):
    """`out[pos] += ...` with the tuple as the whole index of an augmented assignment."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        pos = (i, i % 2)
        out[pos] += a[i] * a[i]


@cuda.jit
def tuple_atomic_index(hist, a):
    """The tuple as the index of an atomic add (Candies' dedispersion writes the tuple in the call)."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        at = (i % 3, i // 3 % 2)
        cuda.atomic.add(hist, at, a[i] * a[i])
