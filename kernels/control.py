"""Branches, conditional expressions and early exits."""
import math

from numba import cuda


def piecewise(out, x, lo, hi):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    v = x[i]
    if v < lo:
        r = lo * v
    elif v > hi:
        r = math.exp(v - hi) + hi
    else:
        r = v * v if v > 0 else -v
    out[i] = r


def clamp_relu(out, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[i] = v if v > 0.0 else 0.01 * v
