"""Kinks and custom rules that finite differences cannot judge."""
import math

from numba import cuda

from harness import partials_of


def abs_plus_max(out, x, y):
    """out = |x| + max(x, y): evaluated at the kinks x = 0 and x = y (docs/engine.md's subgradients:
    d|x|/dx = sign(x), so 0 at 0; max on a tie passes the derivative to its first operand)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = abs(x[i]) + max(x[i], y[i])


@cuda.jit(device=True)
def quantize(x):
    return math.floor(x * 4.0) / 4.0


@partials_of(quantize)
@cuda.jit(device=True)
def quantize_straight_through(x, r):
    return 1.0          # the straight-through estimator: deliberately not the derivative (0 a.e.)


def quantize_map(out, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = 2.0 * quantize(x[i])
