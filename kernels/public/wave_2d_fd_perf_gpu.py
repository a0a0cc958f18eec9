"""Public kernels: wave_2d_fd_perf_gpu (a performance comparison of 2-D finite-difference wave
propagation in Numba, PyTorch and CUDA), its numba.cuda step: a fourth-order Laplacian time step over
a batch of wavefields (`x, z, b = cuda.grid(3)`, a boolean in_domain from chained `and`s, an eager
float32 signature) and the source injection (`wfp[b, sz, sx] +=` at gathered source positions).

Repository: https://github.com/ar4/wave_2d_fd_perf_gpu (commit c4af5320c88c4687a8d02a63206070943d99dbab)
Licence: MIT (LICENSE of the repository: "Copyright (c) 2017 Alan Richardson")
Path: wave_2d_fd_perf_gpu/numba.py
Edits: none to the kernels' code. Upstream defines both kernels inside `VNumba1.__init__` (they close
over nothing); they are lifted to module level here, dedented and otherwise unchanged, since a case
names a module-level function. The Propagator classes around them are left out.

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions: The above copyright notice and this
permission notice shall be included in all copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""
from numba import cuda
import numpy as np


@cuda.jit('void(float32[:, :], float32[:, :, :], float32[:, :, :], float32[:], int32, int32, int32)')
def jitfunc1(model, wfc, wfp, fd, nb, nz, nx):
    x, z, b = cuda.grid(3)
    in_domain = ((z > 1) and (z < nz - 2) and
                 (x > 1) and (x < nx - 2) and
                 (b < nb))
    if in_domain:
        lap = (fd[0] * wfc[b, z, x] +
               fd[1] *
               (wfc[b, z, x + 1] +
                wfc[b, z, x - 1] +
                wfc[b, z + 1, x] +
                wfc[b, z - 1, x]) +
               fd[2] *
               (wfc[b, z, x + 2] +
                wfc[b, z, x - 2] +
                wfc[b, z + 2, x] +
                wfc[b, z - 2, x]))
        wfp[b, z, x] = (model[z, x] * lap
                        + 2 * wfc[b, z, x] - wfp[b, z, x])

@cuda.jit('void(float32[:, :], float32[:, :, :], float32[:, :, :], int32[:, :], int32[:, :], int32)')
def jitfunc2(model, wfp, source_amplitude, sources_z, sources_x, i):
    j = cuda.threadIdx.x
    b = cuda.blockIdx.x
    sz = sources_z[b, j]
    sx = sources_x[b, j]
    wfp[b, sz, sx] += source_amplitude[b, j, i] * model[sz, sx]

