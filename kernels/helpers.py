"""Device functions called from kernels: inlined by the engine, each a child compile job."""
import math

from numba import cuda


@cuda.jit(device=True)
def square(v):
    return v * v


@cuda.jit(device=True)
def wave(v):
    """A call chain: wave -> square."""
    return math.sin(v) + square(v)


@cuda.jit(device=True)
def polar(x, y):
    """Returns a tuple."""
    r = math.sqrt(x * x + y * y)
    return r, math.atan2(y, x)


@cuda.jit(device=True)
def add_into(out, i, v):
    """Writes through an array argument."""
    out[i] += v


def uses_helpers(out, x, y):
    i = cuda.grid(1)
    if i < x.shape[0]:
        r, theta = polar(x[i], y[i])
        out[i] = r * theta
        add_into(out, i, wave(x[i]))
