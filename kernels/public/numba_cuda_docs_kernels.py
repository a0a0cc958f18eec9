"""Public kernels: the code blocks of numba-cuda's user guide (kernels, intrinsics, CUDA array
interface pages).

Repository: https://github.com/NVIDIA/numba-cuda (commit b18b944b2f88a4e840424e49a1b0d29488263b40)
Paths: docs/source/user/kernels.rst (increment_by_one, twice, and increment_a_2D_array),
docs/source/user/intrinsics.rst (max_example, max_example_3d),
docs/source/user/cuda_array_interface.rst (add, a grid-stride loop)
Licence: BSD-2-Clause (SPDX header of the pages; LICENSE of the repository)
Edits: the two increment_by_one versions share a name in the docs; here they are
increment_by_one_manual (the threadIdx/blockIdx version) and increment_by_one (the cuda.grid
version). The code is otherwise as on the pages, with the pages' imports.
"""
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
from numba import cuda
import numpy as np


@cuda.jit
def increment_by_one_manual(an_array):
    # Thread id in a 1D block
    tx = cuda.threadIdx.x
    # Block id in a 1D grid
    ty = cuda.blockIdx.x
    # Block width, i.e. number of threads per block
    bw = cuda.blockDim.x
    # Compute flattened index inside the array
    pos = tx + ty * bw
    if pos < an_array.size:  # Check array boundaries
        an_array[pos] += 1


@cuda.jit
def increment_by_one(an_array):
    pos = cuda.grid(1)
    if pos < an_array.size:
        an_array[pos] += 1


@cuda.jit
def increment_a_2D_array(an_array):
    x, y = cuda.grid(2)
    if x < an_array.shape[0] and y < an_array.shape[1]:
       an_array[x, y] += 1


@cuda.jit
def max_example(result, values):
    """Find the maximum value in values and store in result[0]"""
    tid = cuda.threadIdx.x
    bid = cuda.blockIdx.x
    bdim = cuda.blockDim.x
    i = (bid * bdim) + tid
    cuda.atomic.max(result, 0, values[i])


@cuda.jit
def max_example_3d(result, values):
    """
    Find the maximum value in values and store in result[0].
    Both result and values are 3d arrays.
    """
    i, j, k = cuda.grid(3)
    # Atomically store to result[0,1,2] from values[i, j, k]
    cuda.atomic.max(result, (0, 1, 2), values[i, j, k])


@cuda.jit
def add(x, y, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.shape[0], stride):
        out[i] = x[i] + y[i]
