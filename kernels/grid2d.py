"""Two-dimensional launches."""
from numba import cuda


def affine2d(out, x, w, b):
    """out[i, j] = x[i, j] * w[j] + b[i]: w and b are read by a whole row/column of threads."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] * w[j] + b[i]


def transpose_scale(out, x, s):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = s * x[j, i]
