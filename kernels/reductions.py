"""Kernels whose reverse sums many per-thread contributions into a few addresses: coefficients
read by every thread (uniform-index reads) next to Active scalars, in full and partial warps."""
from numba import cuda


def scaled_quintic(out, x, c, alpha):
    """Five coefficients and an Active scale: six sums reduced together (padded to eight)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        out[i] = alpha * (c[0] + t * (c[1] + t * (c[2] + t * (c[3] + t * c[4]))))


def long_polynomial(out, x, c):
    """A static loop over 34 coefficients: 34 uniform-index sums, more than one warp holds."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        acc = 0.0
        for k in range(34):
            acc = acc * t + c[k]
        out[i] = acc
