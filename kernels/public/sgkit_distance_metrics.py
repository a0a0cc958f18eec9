"""Public kernels: sgkit's numba.cuda "map" kernels for pairwise distances between genotype vectors
(Euclidean and Pearson correlation): a 2-D grid over vector pairs, cuda.grid(2)[types.uint32(0)],
numba types used as casts (types.uint32, types.float32), a while loop over a uint32 counter,
missing values (negative entries) skipped, rows x[i1] and out[i1][i2] passed to a device function.

Repository: https://github.com/sgkit-dev/sgkit (commit 72f7588f341b441666b0a0a04577cfba9704c64f)
Path: sgkit/distance/metrics.py
Licence: Apache-2.0 (LICENSE of the repository). Copyright the sgkit developers.
Edits: none to the kernels or device functions. Only they are copied, with the imports they use; the
CPU guvectorize functions and the host-side callers are left out. The import
`from sgkit.typing import ArrayLike` (a Union of numpy and dask array types, used only in the
annotations) becomes `typing.Any`, so this file does not import sgkit and dask.
"""
import math
from typing import Any

import numpy as np
from numba import cuda, types

from typing import Any as ArrayLike  # sgkit.typing.ArrayLike is a typing alias (Union of array types)


@cuda.jit(device=True)  # type: ignore
def _correlation(
    x: ArrayLike, y: ArrayLike, out: ArrayLike
) -> None:  # pragma: no cover.
    # Note: assigning variable and only saving the final value in the
    # array made this significantly faster.

    # aggressively making all variables explicitly typed
    # makes it more performant by a factor of ~2-3x
    v0 = types.float32(0)
    v1 = types.float32(0)
    v2 = types.float32(0)
    v3 = types.float32(0)
    v4 = types.float32(0)
    v5 = types.float32(0)

    m = types.uint32(x.shape[types.uint32(0)])
    i = types.uint32(0)

    zero = types.uint32(0)

    while i < m:
        if x[i] >= zero and y[i] >= zero:
            v0 += x[i]
            v1 += y[i]
            v2 += x[i] * x[i]
            v3 += y[i] * y[i]
            v4 += x[i] * y[i]
            v5 += 1
        i = types.uint32(i + types.uint32(1))

    out[0] = v0
    out[1] = v1
    out[2] = v2
    out[3] = v3
    out[4] = v4
    out[5] = v5


@cuda.jit  # type: ignore
def correlation_map_kernel(
    x: ArrayLike, y: ArrayLike, out: ArrayLike
) -> None:  # pragma: no cover.
    i1 = types.uint32(cuda.grid(2)[types.uint32(0)])
    i2 = types.uint32(cuda.grid(2)[types.uint32(1)])

    out_shape_0 = types.uint32(out.shape[types.uint32(0)])
    out_shape_1 = types.uint32(out.shape[types.uint32(1)])

    if i1 >= out_shape_0 or i2 >= out_shape_1:
        # Quit if (x, y) is outside of valid output array boundary
        return

    _correlation(x[i1], y[i2], out[i1][i2])


@cuda.jit(device=True)  # type: ignore
def _euclidean_distance_map(
    a: ArrayLike, b: ArrayLike, out: ArrayLike
) -> None:  # pragma: no cover.
    """Helper function for the map step of euclidean distance which runs on
    the device (GPU) itself.

    Parameters
    ----------
    a
        [array-like, shape: (1, n)]
    b
        [array-like, shape: (1, n)]
    out
        [array-like, shape: (1)]
        The output array for returning the result.

    Returns
    -------
    An ndarray, which contains the squared sum of the corresponding elements
    of the given pair of vectors.
    """
    square_sum = types.float32(0)

    zero = types.uint32(0)
    a_shape_0 = types.uint32(a.shape[types.uint32(0)])
    i = types.uint32(0)

    while i < a_shape_0:
        if a[i] >= zero and b[i] >= zero:
            square_sum += (a[i] - b[i]) ** types.uint32(2)
        i = types.uint32(i + types.uint32(1))
    out[0] = square_sum


@cuda.jit  # type: ignore
def euclidean_map_kernel(
    x: ArrayLike, y: ArrayLike, out: ArrayLike
) -> None:  # pragma: no cover.
    """Euclidean map CUDA kernel.

    Parameters
    ----------
    x
        [array-like, shape: (m, n)]
    y
        [array-like, shape: (p, n)]
    out
        [array-like, shape: (m, p, 1)]
        The zeros array of shape (m, p, 1) for returning the result.

    Returns
    -------
    An ndarray, which contains the output of the calculation of the application
    of euclidean distance on all pairs of vectors from x and y arrays.
    """
    # Aggresive typecasting of all the variables is done to improve performance.

    # Unique index of the thread in the whole grid.
    i1 = types.uint32(cuda.grid(2)[types.uint32(0)])
    i2 = types.uint32(cuda.grid(2)[types.uint32(1)])

    out_shape_0 = types.uint32(out.shape[types.uint32(0)])
    out_shape_1 = types.uint32(out.shape[types.uint32(1)])

    if i1 >= out_shape_0 or i2 >= out_shape_1:
        # Quit if (x, y) is outside of valid output array boundary
        # This is required because we may spin up more threads than we need.
        return
    _euclidean_distance_map(x[i1], y[i2], out[i1][i2])
