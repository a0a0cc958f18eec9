"""Public kernel: numba-cuda's library transpose kernel (shared-memory tile, padded by one column).

Repository: https://github.com/NVIDIA/numba-cuda (commit b18b944b2f88a4e840424e49a1b0d29488263b40)
Licence: BSD-2-Clause (SPDX header of the file; LICENSE of the repository)
Path: numba_cuda/numba/cuda/kernels/transpose.py (the kernel inside transpose())
Edits: the kernel is a closure inside transpose(); it is moved to module level, and the two values
it closes over, computed there at run time, are module constants: tile_shape = (16, 17), what
transpose() computes for 256 threads per block (tile_width = tile_height = 16), and dt = float64
(transpose() uses the array's dtype; a float64 tile holds a float32 input exactly). The kernel
text is unchanged.
"""
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
from numba import cuda
from numba.cuda import float64

tile_shape = (16, 17)
dt = float64


@cuda.jit
def kernel(input, output):
    tile = cuda.shared.array(shape=tile_shape, dtype=dt)

    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bx = cuda.blockIdx.x * cuda.blockDim.x
    by = cuda.blockIdx.y * cuda.blockDim.y
    x = by + tx
    y = bx + ty

    if by + ty < input.shape[0] and bx + tx < input.shape[1]:
        tile[ty, tx] = input[by + ty, bx + tx]
    cuda.syncthreads()
    if y < output.shape[0] and x < output.shape[1]:
        output[y, x] = tile[tx, ty]
