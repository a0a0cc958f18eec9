"""Kernels whose arithmetic precision differs from their arguments' dtype."""
from numba import cuda, float32, float64


def float32_inside(out, x):
    """float64 arrays, float32 arithmetic: every value is cast to float32 and the result back."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = float32(x[i])
        out[i] = float64(v * v * float32(1.25) + float32(3.0) * v)
