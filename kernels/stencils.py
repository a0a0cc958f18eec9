"""Stencils whose reverse is a scatter (cherimoya issue 25, clad PR 1104)."""
from numba import cuda


def conv3(out, x, w, d):
    """out[l] = w0 x[l-d] + w1 x[l] + w2 x[l+d]: in reverse, x[l] gets contributions from three threads."""
    l = cuda.grid(1)
    n = x.shape[0]
    if l >= d and l < n - d:
        out[l] = w[0] * x[l - d] + w[1] * x[l] + w[2] * x[l + d]
