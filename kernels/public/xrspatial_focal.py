"""Public kernels: xarray-spatial's numba.cuda raster kernels, focal statistics over a masked window (mean with excluded values, max, range, std, sum).

Repository: https://github.com/makepath/xarray-spatial (commit 5f6238f80fceb39740f975bc35cb6d93f6255c83)
Licence: MIT (LICENSE.txt of the repository: "Copyright (c) 2020-2022 makepath")
Path: xrspatial/focal.py
Edits: none to the kernels. Only the kernels (and the device functions they call) are copied, with
the module imports they use; the CPU, cupy and dask code around them is left out.

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions: The above copyright notice and this
permission notice shall be included in all copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""
from math import isnan
import math

from numba import cuda


@cuda.jit
def _mean_gpu(data, excludes, out):
    # 1. Get coordinates: x is Column, y is Row
    x, y = cuda.grid(2)

    rows, cols = data.shape

    # 2. BOUNDS CHECK FIRST
    # Strictly ensure this thread is inside the image before touching any memory.
    if 0 <= x < cols and 0 <= y < rows:

        # Safe to read the center pixel now
        val = data[y, x]

        # 3. Check Excludes (Center pixel only)
        # Matches numpy behavior: if center is excluded, don't calculate mean.
        is_excluded = False
        for ex in excludes:
            if (val == ex) or (isnan(val) and isnan(ex)):
                is_excluded = True
                break

        if is_excluded:
            out[y, x] = val
            return

        # 4. Define Window Bounds (The Safety Check)
        # We clamp the window edges to the image borders here.
        # This guarantees 'r' and 'c' in the loops below are always valid.
        left = max(x - 1, 0)
        right = min(x + 2, cols)      # range is exclusive, so +2 covers neighbor x+1
        bottom = max(y - 1, 0)
        top = min(y + 2, rows)

        sum_val = 0.0
        num = 0

        # 5. Iterate Window
        for r in range(bottom, top):
            for c in range(left, right):
                neighbor_val = data[r, c]

                # Standard nanmean behavior: skip NaNs, no exclude check on neighbors
                if not isnan(neighbor_val):
                    sum_val += neighbor_val
                    num += 1

        # 6. Write Output
        if num > 0:
            out[y, x] = sum_val / num
        else:
            # Fallback: If mean cannot be calculated (e.g. all neighbors are NaN),
            # keep the original value as requested.
            out[y, x] = val


@cuda.jit
def _focal_max_cuda(data, kernel, out):
    i, j = cuda.grid(2)

    rows, cols = data.shape
    if i >= rows or j >= cols:
        return

    dr = kernel.shape[0] // 2
    dc = kernel.shape[1] // 2

    # Start with -inf so any real value replaces it
    m = -math.inf
    found = False

    for k in range(kernel.shape[0]):
        for h in range(kernel.shape[1]):
            w = kernel[k, h]
            if w == 0:
                continue  # mask says "ignore this neighbor"

            ii = i + k - dr
            jj = j + h - dc

            if 0 <= ii < rows and 0 <= jj < cols:
                v = data[ii, jj]
                if (not found) or (v > m):
                    m = v
                    found = True

    # With your mask containing the center (1), found should always be True.
    # But keep this for safety.
    out[i, j] = m if found else data[i, j]


@cuda.jit
def _focal_range_cuda(data, kernel, out):
    i, j = cuda.grid(2)

    rows, cols = data.shape
    if i >= rows or j >= cols:
        return

    dr = kernel.shape[0] // 2
    dc = kernel.shape[1] // 2

    mx = -math.inf
    mn = math.inf
    found = False

    for k in range(kernel.shape[0]):
        for h in range(kernel.shape[1]):
            if kernel[k, h] == 0:
                continue  # mask says ignore

            ii = i + k - dr
            jj = j + h - dc

            if 0 <= ii < rows and 0 <= jj < cols:
                v = data[ii, jj]
                if not found:
                    mx = v
                    mn = v
                    found = True
                else:
                    if v > mx:
                        mx = v
                    if v < mn:
                        mn = v

    out[i, j] = (mx - mn) if found else 0.0


@cuda.jit
def _focal_std_cuda(data, kernel, out):
    i, j = cuda.grid(2)

    rows, cols = data.shape
    if i >= rows or j >= cols:
        return

    dr = kernel.shape[0] // 2
    dc = kernel.shape[1] // 2

    w_sum = 0.0
    sum_wx = 0.0
    sum_wx2 = 0.0

    for k in range(kernel.shape[0]):
        for h in range(kernel.shape[1]):
            w = kernel[k, h]
            if w == 0:
                continue  # mask says ignore

            ii = i + k - dr
            jj = j + h - dc

            if 0 <= ii < rows and 0 <= jj < cols:
                x = data[ii, jj]
                w_sum += w
                sum_wx += w * x
                sum_wx2 += w * x * x

    # With your mask including the center, w_sum should be > 0. Guard anyway.
    if w_sum > 0.0:
        mean = sum_wx / w_sum
        var = (sum_wx2 / w_sum) - (mean * mean)

        # Numerical safety (tiny negative due to floating point)
        if var < 0.0:
            var = 0.0

        out[i, j] = math.sqrt(var)
    else:
        out[i, j] = 0.0


@cuda.jit
def _focal_sum_cuda(data, kernel, out):
    i, j = cuda.grid(2)

    rows, cols = data.shape
    if i >= rows or j >= cols:
        return

    dr = kernel.shape[0] // 2
    dc = kernel.shape[1] // 2

    s = 0.0
    for k in range(kernel.shape[0]):
        for h in range(kernel.shape[1]):
            w = kernel[k, h]
            if w == 0:
                continue  # mask says ignore

            ii = i + k - dr
            jj = j + h - dc

            if 0 <= ii < rows and 0 <= jj < cols:
                s += w * data[ii, jj]

    out[i, j] = s


