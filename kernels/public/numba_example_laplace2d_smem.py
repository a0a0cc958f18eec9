"""Public kernel: numba's example Jacobi relaxation with a shared-memory halo tile (34 x 34).

Repository: https://github.com/numba/numba (commit 0ef4f161ed1ff6564a661cc36bc691fbed4874bd)
Licence: BSD-2-Clause (LICENSE of the repository)
Path: examples/laplace2d/laplace2d-numba-cuda-smem.py
Edits: one, below (the decorator). The
kernel assumes 32 x 32 blocks (tx == 31); its halo loads read A[j - 1, i] at j = 0 and
A[j, i + 1] at the right edge, as published (negative and edge indices wrap or read past the row).

Edit for the harness (not the engine): the kernel's eager signature is kept as a comment and the
kernel is decorated with plain @cuda.jit (compiled lazily for the same argument types). An eagerly
compiled kernel binds to a CUDA context at import, and the project's compile-only ptx tier, which
runs without a GPU, then fails to import the module (CudaSupportError at the decorator, through
harness/cases/inputs.py import_file). Restore the published decorator once that tier can import it.
"""
from __future__ import print_function

import time

import numpy as np

from numba import cuda, f8


# NOTE: CUDA kernel does not return any value

# published: @cuda.jit("(f8[:,:], f8[:,:], f8[:,:])")
@cuda.jit
def jacobi_relax_core(A, Anew, error):
    smem = cuda.shared.array(shape=(32 + 2, 32 + 2), dtype=f8)
    n = A.shape[0]
    m = A.shape[1]

    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y

    j = ty + cuda.blockIdx.y * cuda.blockDim.y
    i = tx + cuda.blockIdx.x * cuda.blockDim.x

    sy = ty + 1
    sx = tx + 1

    smem[sy, sx] = A[j, i]
    if tx == 0 and i >= 1:
        smem[sy, 0] = A[j, i - 1]

    if ty == 0 and j < m - 1:
        smem[0, sx] = A[j - 1, i]

    if tx == 31 and j >= 1:
        smem[sy, 33] = A[j, i + 1]

    if ty == 31 and j < n - 1:
        smem[33, sx] = A[j + 1, i]

    cuda.syncthreads() # ensure smem is visible by all threads in the block

    if j >= 1 and j < n - 1 and i >= 1 and i < m - 1:
        Anew[j, i] = 0.25 * ( smem[sy, sx + 1] + smem[sy, sx - 1] \
                            + smem[sy - 1, sx] + smem[sy + 1, sx])
        error[j, i] = Anew[j, i] - A[j, i]
