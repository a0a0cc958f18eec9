"""Device helpers in a file of their own: a refusal inside one must name this file, not the
kernel's."""
import math

from numba import cuda


@cuda.jit(device=True)
def log_gamma_of(v):
    return 0.5 * math.lgamma(v)


@cuda.jit(device=True)
def sum_of_powers(v, n):
    s = 0.0
    p = 1.0
    for k in range(n):
        p = p * v
        s += p
    return s
