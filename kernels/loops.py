"""Loop-carried state (Warp issue 1694: values defined before a dynamic loop)."""
from numba import cuda


def weighted_sum_dynamic(out, x, w, n):
    i = cuda.grid(1)
    if i < x.shape[0]:
        g = x[i] * x[i]
        s = 0.0
        for k in range(n):
            s += w[k]
        out[i] = g * s
