"""Kernels that reach another module's device functions and constants through the module's name,
numpy's and math's float constants (`np.nan`, `np.pi`, `math.tau`), a numpy float64 module constant,
`raise` (numba.cuda ends the thread, as for a failed assert), and views with a negative step
(`x[::-1]`, `x[n - 2::-2]`). Loaded as TARDIS's tests load their module: by path, beside this file."""
import importlib.util
import math
import pathlib

import numpy as np
from numba import cuda

_spec = importlib.util.spec_from_file_location(
    "dialect_other_modules_helpers", pathlib.Path(__file__).with_name("dialect_other_modules_helpers.py"))
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)

PI64 = np.arccos(-1.0)          # np.float64, not float


@cuda.jit
def module_calls(out, x, w):
    """helpers.f(...), helpers.CONST and a module's numpy constant."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = helpers.shape_factor(x[i], w)
        if x[i] < -helpers.THRESHOLD * 1.0e6:      # never met: np.nan is lowered, not produced
            v = np.nan
        out[i] = v * PI64 + helpers.SCALE * np.pi + math.tau * helpers.checked_log(x[i] * x[i] + 1.0)


@cuda.jit
def raises(out, x):
    """A raise under a condition the inputs never meet, in the kernel itself."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        if x[i] > 1.0e30:
            raise ValueError("out of range")
        out[i] = x[i] * x[i]


@cuda.jit(device=True)
def weighted_first(v, w):
    return v[0] * w[0] + v[1] * w[1] + v[v.shape[0] - 1]


@cuda.jit
def reversed_views(out, x, w):
    """x[::-1] bound to a name and passed to a device function, and a view stepping down by 2."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        r = x[::-1]
        down = x[x.shape[0] - 2::-2]
        out[i] = r[i] * weighted_first(down, w) + r[-1] + len(down)


@cuda.jit
def numpy_float64_constant(out, x):
    """Only a numpy float64 module constant (`np.arccos(-1.0)`): its repr, `np.float64(...)`, was
    written into generated kernels, which do not import np (a NameError, an engine crash)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * x[i] * PI64
