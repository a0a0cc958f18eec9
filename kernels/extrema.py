"""Atomic extrema next to other state (issue 10 item 6: finite-difference steps per argument)."""
from numba import cuda


def min_beside_large(out, x, big, half):
    """out[0] = min(out[0], x[i]^2) by atomic min, beside half[i] = big[i] / 2 + x[i] (big near 10000).
    A finite-difference step scaled by the largest value of the whole state (about 0.06 here) moves
    the small squares of x far enough to change which thread wins the minimum."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.min(out, 0, x[i] * x[i])
        half[i] = big[i] * 0.5 + x[i]

