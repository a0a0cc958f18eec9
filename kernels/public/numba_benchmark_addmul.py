"""Public kernel: numba-benchmark's CUDA addmul (elementwise with math.fabs, early return).

Repository: https://github.com/numba/numba-benchmark (commit 6d682a7f849d5e92e2f33ec425e83d72dcc9a5ab)
Path: benchmarks/bench_cuda.py
Licence: BSD-2-Clause (LICENSE of the repository: Copyright (c) 2014, Continuum Analytics, Inc.)
Edits: the function, defined inside _jit_setup1() (which jits it as addmul_f32/addmul_f64), is at
module level, undecorated (the harness jits it as the benchmark does with cuda.jit()); unchanged.
"""
import math

from numba import cuda, float32, float64


def addmul(x, y, out):
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i >= x.shape[0]:
        return
    out[i] = x[i] + y[i] * math.fabs(x[i])
