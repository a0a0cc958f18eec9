"""Temporary storage that mixes Const data with differentiable data (Enzyme.jl issue 2133)."""
from numba import cuda, float64


def dot_via_temporary(out, x, y):
    """y (Const) is copied into a fresh per-thread temporary, then multiplied with x and summed."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        y2 = cuda.local.array(1, float64)
        y2[0] = y[i]
        cuda.atomic.add(out, 0, x[i] * y2[0])
