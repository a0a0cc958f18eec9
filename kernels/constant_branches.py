"""Branches on constant conditions: numba prunes the side the constant rules out before it types the
kernel, and the engine's front end does the same (harness/engine/frontend/desugar.py, BRANCHES).
Before it did, a reverse sweep that recomputed a loop body kept both sides of its copy of the
branch, and numba rejected the generated kernel (a value defined only on the pruned side had no type)."""
import math

from numba import cuda

USE_SQUARE = 1
SCALE = 2.5
DEBUG = False


@cuda.jit
def module_flag(out, x):
    """A module constant as a feature flag, in straight-line code."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        if USE_SQUARE > 0:
            v = x[i] * x[i]
        else:
            v = math.sin(x[i]) * SCALE
        out[i] = v * x[i]


@cuda.jit
def strided_module_flag(out, x):
    """The flag inside a grid-stride loop, whose reverse sweep recomputes the body."""
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        if USE_SQUARE > 0 and not DEBUG:
            v = x[i] * x[i]
        else:
            w = math.exp(x[i])
            v = w / (1.5 + x[i] * x[i])
        out[i] = v * x[i]


@cuda.jit
def strided_local_constant(out, x):
    """A local bound once to a constant, compared inside the loop."""
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        t = 1.04
        if t > 0.46:
            v = -x[i]
        else:
            w = math.exp(x[i])
            v = w / (1.5 + x[i] * x[i])
        out[i] = v * x[i] + 0.5 * (v if not DEBUG else w)
