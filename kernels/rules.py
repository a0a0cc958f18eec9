"""Kernels of the rule cases (cases/rules-*.yaml): every derivative rule of the engine's table
(harness/engine/rules/table.py) differentiated by at least one case in forward and reverse mode.

One function per output row (`out[k, i]`), so that a wrong rule shows up in its own Jacobian rows
and the oracles' worst entries name it. Each kernel's docstring gives the input domain its case
draws from (inside every function's domain, away from kinks and jumps).
"""
import math

import numpy as np
from numba import cuda


def trig(out, x, y):
    """x in (-0.8, 0.8), y in (0.5, 1.5)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        out[0, i] = math.sin(u)
        out[1, i] = math.cos(u)
        out[2, i] = math.tan(u)
        out[3, i] = math.asin(u)
        out[4, i] = math.acos(u)
        out[5, i] = math.atan(u)
        out[6, i] = math.atan2(u, v)
        out[7, i] = math.atan2(v, u + 2.0)
        out[8, i] = math.hypot(u, v)
        out[9, i] = math.degrees(u * v)
        out[10, i] = math.radians(u * 40.0 + v)


def hyperbolic(out, x, y):
    """x in (-0.8, 0.8), y in (0.5, 1.5)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        out[0, i] = math.sinh(u)
        out[1, i] = math.cosh(u)
        out[2, i] = math.tanh(u)
        out[3, i] = math.asinh(u * 3.0)
        out[4, i] = math.acosh(1.0 + v)
        out[5, i] = math.atanh(u)
        out[6, i] = math.erf(u)
        out[7, i] = math.erfc(u * v)


def explog(out, x, y):
    """x in (0.5, 2), y in (0.5, 1.5)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        out[0, i] = math.exp(u)
        out[1, i] = math.exp2(u)
        out[2, i] = math.expm1(u - 1.0)
        out[3, i] = math.log(u)
        out[4, i] = math.log2(u)
        out[5, i] = math.log10(u)
        out[6, i] = math.log1p(u - 0.4)
        out[7, i] = math.sqrt(u)
        out[8, i] = u ** v
        out[9, i] = math.pow(v, u)
        out[10, i] = u ** 3
        out[11, i] = math.ldexp(u * v, 3)


def constant_powers(out, x):
    """x in (0.5, 2): powers whose exponent is a constant, whose derivative the engine writes
    without pow (1.5 sqrt(x) for x ** 1.5, 1 / sqrt(x) for x ** 0.5, ...)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        out[0, i] = u ** 0.5
        out[1, i] = u ** 1.5
        out[2, i] = u ** -0.5
        out[3, i] = u ** 2.0
        out[4, i] = u ** 3.0
        out[5, i] = u ** 1.0
        out[6, i] = u ** 0.0 + u
        out[7, i] = math.pow(u, 2.5)
        out[8, i] = u ** 2
        out[9, i] = (u + 1.0) ** -1.0


def arith(out, x, y):
    """|x| in (1, 2) with either sign, y in (0.5, 1.5): away from 0 (abs, copysign) and the jumps of
    mod, fmod and remainder (the case's values keep 3.3 x / y clear of integers and half-integers)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        w = u                             # copy
        out[0, i] = u + v
        out[1, i] = u - v
        out[2, i] = u * v
        out[3, i] = u / v
        out[4, i] = v / u
        out[5, i] = -w
        out[6, i] = (3.3 * u) % v
        out[7, i] = math.fmod(3.3 * u, v)
        out[8, i] = math.remainder(3.3 * u, v)
        out[9, i] = abs(u)
        out[10, i] = math.fabs(u)
        out[11, i] = min(u, v)
        out[12, i] = max(u, v)
        out[13, i] = math.copysign(v, u)
        out[14, i] = math.nextafter(u * v, 0.0)
        out[15, i] = float(u * v)


def casts(out, x, y):
    """Casts between float precisions, differentiated as the identity. In the float32 run every
    cast is exact (float32 to float32, float32 to float64), so finite differences can check them."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        out[0, i] = np.float32(u) * v
        out[1, i] = np.float64(u) * np.float32(v)
        out[2, i] = float(u) + u * v


def half_cast(out, x, y):
    """A cast through float16: refused (float16 values carry no derivatives)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[0, i] = float(np.float16(x[i])) * y[i]


def scale_half(out, x):
    """float16 arrays: refused when differentiable."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 2.0
