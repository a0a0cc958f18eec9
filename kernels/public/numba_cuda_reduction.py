"""Public kernel: numba-cuda's documented shared-memory reduction, the while-loop form.

Repository: https://github.com/NVIDIA/numba-cuda (commit b18b944b2f88a4e840424e49a1b0d29488263b40)
Licence: BSD-2-Clause (SPDX header of the file; LICENSE of the repository)
Path: numba_cuda/numba/cuda/tests/doc_examples/test_reduction.py (ex_reduction.kernel)
Edits: the kernel, defined inside the test method, is moved to module level; nelem, which the
example sets to len(a) = 1024 at run time, is the module constant 64 so that the case stays
small (one block of 64 threads over 64 elements, as the example's one block of 1024 over 1024).
The kernel text is unchanged. Its shared array is int32, as published: a float input is
truncated, so the derivative is zero wherever it exists (the case's inputs sit between integers).
"""
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
import numpy as np
from numba import cuda
from numba.cuda.types import int32

nelem = 64


@cuda.jit
def array_sum(data):
    tid = cuda.threadIdx.x
    size = len(data)
    if tid < size:
        i = cuda.grid(1)

        # Declare an array in shared memory
        shr = cuda.shared.array(nelem, int32)
        shr[tid] = data[i]

        # Ensure writes to shared memory are visible
        # to all threads before reducing
        cuda.syncthreads()

        s = 1
        while s < cuda.blockDim.x:
            if tid % (2 * s) == 0:
                # Stride by `s` and add
                shr[tid] += shr[tid + s]
            s *= 2
            cuda.syncthreads()

        # After the loop, the zeroth  element contains the sum
        if tid == 0:
            data[tid] = shr[tid]
