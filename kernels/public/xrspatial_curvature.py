"""Public kernels: xarray-spatial's numba.cuda raster kernels, the curvature of a terrain (a device function given a 3 x 3 slice).

Repository: https://github.com/makepath/xarray-spatial (commit 5f6238f80fceb39740f975bc35cb6d93f6255c83)
Licence: MIT (LICENSE.txt of the repository: "Copyright (c) 2020-2022 makepath")
Path: xrspatial/curvature.py
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
from numba import cuda


@cuda.jit(device=True)
def _gpu(arr, cellsize):
    d = (arr[1, 0] + arr[1, 2]) / 2 - arr[1, 1]
    e = (arr[0, 1] + arr[2, 1]) / 2 - arr[1, 1]
    curv = -2 * (d + e) * 100 / (cellsize[0] * cellsize[0])
    return curv


@cuda.jit
def _run_gpu(arr, cellsize, out):
    i, j = cuda.grid(2)
    di = 1
    dj = 1
    if (i - di >= 0 and i + di <= out.shape[0] - 1 and
            j - dj >= 0 and j + dj <= out.shape[1] - 1):
        out[i, j] = _gpu(arr[i - di:i + di + 1, j - dj:j + dj + 1], cellsize)


