"""Public kernel: numba-cuda's documented reuse of a @numba.jit function inside a kernel.

Repository: https://github.com/NVIDIA/numba-cuda (commit b18b944b2f88a4e840424e49a1b0d29488263b40)
Licence: BSD-2-Clause (SPDX header of the file; LICENSE of the repository)
Path: numba_cuda/numba/cuda/tests/doc_examples/test_cpu_gpu_compat.py (ex_cpu_gpu_compat)
Edits: the imports, business_logic and the kernel, defined inside the test method, are moved to
module level; unchanged otherwise.
"""
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
from math import pi

import numba
from numba import cuda


@numba.jit
def business_logic(x, y, z):
    return 4 * z * (2 * x - (4 * y) / 2 * pi)


@cuda.jit
def f(res, xarr, yarr, zarr):
    tid = cuda.grid(1)
    if tid < len(xarr):
        # The function decorated with numba.jit may be directly reused
        res[tid] = business_logic(xarr[tid], yarr[tid], zarr[tid])
