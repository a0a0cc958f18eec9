"""Counted loops whose start is not 0 and whose step is not 1.

The reverse sweep rebuilds a counted loop's variable from the iteration number (start +
iteration * step), both where it restores taped registers and where a recomputed loop replays
iterations from its entry registers. A loop over range(n) cannot tell start + r * step from r,
so these loops read coefficients at an offset, with a stride, and use the counter in the
arithmetic itself."""
from numba import cuda


def strided_product(out, x, c, lo, n):
    """acc = acc * (t + c[k]) over k = lo, lo + 3, ... < n: d acc / d acc_prev = t + c[k] needs
    the iteration's own k, and d acc / d t needs acc_prev (taped or recomputed)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        acc = 1.0
        for k in range(lo, n, 3):
            acc = acc * (t + c[k]) + 0.125 * k * t
        out[i] = acc
