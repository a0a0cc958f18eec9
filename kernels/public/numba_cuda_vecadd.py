"""Public kernel: numba-cuda's documented vector addition (docs/source/user/examples.rst).

Repository: https://github.com/NVIDIA/numba-cuda (commit b18b944b2f88a4e840424e49a1b0d29488263b40)
Licence: BSD-2-Clause (SPDX header of the file; LICENSE of the repository)
Path: numba_cuda/numba/cuda/tests/doc_examples/test_vecadd.py (ex_vecadd.kernel)
Edits: the kernel, defined inside the test method, is moved to module level (a case names a
top-level function); the body and the decorator are unchanged.
"""
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
import numpy as np
from numba import cuda


@cuda.jit
def f(a, b, c):
    # like threadIdx.x + (blockIdx.x * blockDim.x)
    tid = cuda.grid(1)
    size = len(c)

    if tid < size:
        c[tid] = a[tid] + b[tid]
