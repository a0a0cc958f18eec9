"""A module of device functions and constants that kernels/dialect_other_modules.py imports and
names through its module (`helpers.shape_factor(...)`, `helpers.THRESHOLD`), as TARDIS's tests call
`formal_integral_cuda.intensity_black_body_cuda(...)` and STUMPY's kernels `core._gpu_searchsorted_right`."""
import math

import numpy as np
from numba import cuda

THRESHOLD = 0.25
SCALE = np.float64(1.5)         # a numpy float64 constant: numba types it as a float


class OutOfRange(IndexError):
    pass


@cuda.jit(device=True)
def shape_factor(x, w):
    if x > THRESHOLD:
        return math.exp(-w * x * x) * SCALE
    return x * w


@cuda.jit(device=True)
def checked_log(x):
    """A device function that raises on inputs it does not handle, as TARDIS's binary search does."""
    if x <= 0:
        raise OutOfRange
    return math.log(x)
