"""Public kernels: numba-cuda's random number generator examples (numba.cuda.random).

Repository: https://github.com/NVIDIA/numba-cuda (commit b18b944b2f88a4e840424e49a1b0d29488263b40)
Paths: docs/source/user/random.rst (compute_pi, "A simple example"),
numba_cuda/numba/cuda/tests/doc_examples/test_random.py (random_3d, the page's 3-D grid example),
numba_cuda/numba/cuda/tests/cudapy/test_random.py (rng_kernel_float32, rng_kernel_float64 and the
UNIFORM and NORMAL constants they compare with)
Licence: BSD-2-Clause (SPDX header of the files; LICENSE of the repository)
Edits: random_3d is defined inside the test method test_ex_3d_grid there, with its imports; here it
is at module level with the same imports. The code is otherwise as in the files, with their imports
(the page's `from __future__ import print_function, absolute_import` left out: it changes nothing in
Python 3).
"""
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
from numba import cuda
from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32  # noqa: F401
from numba.cuda.random import (
    xoroshiro128p_normal_float32,
    xoroshiro128p_uniform_float64,
    xoroshiro128p_normal_float64,
)
import numpy as np  # noqa: F401


# ---------------------------------------------------------------- docs/source/user/random.rst

@cuda.jit
def compute_pi(rng_states, iterations, out):
    """Find the maximum value in values and store in result[0]"""
    thread_id = cuda.grid(1)

    # Compute pi by drawing random (x, y) points and finding what
    # fraction lie inside a unit circle
    inside = 0
    for i in range(iterations):
        x = xoroshiro128p_uniform_float32(rng_states, thread_id)
        y = xoroshiro128p_uniform_float32(rng_states, thread_id)
        if x**2 + y**2 <= 1.0:
            inside += 1

    out[thread_id] = 4.0 * inside / iterations


# ------------------------------------------ numba_cuda/numba/cuda/tests/doc_examples/test_random.py

@cuda.jit
def random_3d(arr, rng_states):
    # Per-dimension thread indices and strides
    startx, starty, startz = cuda.grid(3)
    stridex, stridey, stridez = cuda.gridsize(3)

    # Linearized thread index
    tid = (startz * stridey * stridex) + (starty * stridex) + startx

    # Use strided loops over the array to assign a random value to each entry
    for i in range(startz, arr.shape[0], stridez):
        for j in range(starty, arr.shape[1], stridey):
            for k in range(startx, arr.shape[2], stridex):
                arr[i, j, k] = xoroshiro128p_uniform_float32(
                    rng_states, tid
                )


# ------------------------------------------------ numba_cuda/numba/cuda/tests/cudapy/test_random.py

# Distributions
UNIFORM = 1
NORMAL = 2


@cuda.jit
def rng_kernel_float32(states, out, count, distribution):
    thread_id = cuda.grid(1)

    for i in range(count):
        idx = thread_id * count + i

        if distribution == UNIFORM:
            out[idx] = xoroshiro128p_uniform_float32(states, thread_id)
        elif distribution == NORMAL:
            out[idx] = xoroshiro128p_normal_float32(states, thread_id)


@cuda.jit
def rng_kernel_float64(states, out, count, distribution):
    thread_id = cuda.grid(1)

    for i in range(count):
        idx = thread_id * count + i

        if distribution == UNIFORM:
            out[idx] = xoroshiro128p_uniform_float64(states, thread_id)
        elif distribution == NORMAL:
            out[idx] = xoroshiro128p_normal_float64(states, thread_id)
