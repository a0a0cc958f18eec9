"""Public kernels: numba-cuda's math-function test kernels (one thread per element, no bounds check).

Repository: https://github.com/NVIDIA/numba-cuda (commit b18b944b2f88a4e840424e49a1b0d29488263b40)
Licence: BSD-2-Clause (SPDX header of the file; LICENSE of the repository)
Path: numba_cuda/numba/cuda/tests/cudapy/test_math.py
Edits: none to the kernels (module-level, undecorated, as in the file: the test jits them); only
the seven kernels the cases use are copied, with the file's imports they need.
"""
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
from numba import cuda
import math


def math_tanh(A, B):
    i = cuda.grid(1)
    B[i] = math.tanh(A[i])


def math_atan2(A, B, C):
    i = cuda.grid(1)
    C[i] = math.atan2(A[i], B[i])


def math_erf(A, B):
    i = cuda.grid(1)
    B[i] = math.erf(A[i])


def math_expm1(A, B):
    i = cuda.grid(1)
    B[i] = math.expm1(A[i])


def math_log1p(A, B):
    i = cuda.grid(1)
    B[i] = math.log1p(A[i])


def math_hypot(A, B, C):
    i = cuda.grid(1)
    C[i] = math.hypot(A[i], B[i])


def math_pow(A, B, C):
    i = cuda.grid(1)
    C[i] = math.pow(A[i], B[i])
