"""Public kernels: PELS ("Performance Engineering for Linear Solvers", TU Delft training material),
its numba.cuda building blocks of a CG solver: axpby, a diagonal scaling, a dot product (a
grid-stride loop, a shared-memory tree reduction in a while loop, an atomic add per block), a CSR
sparse matrix-vector product and a SELL-C-sigma one (assert, len, min, an early return).

Repository: https://github.com/jthies/PELS (commit 2a02031e6341a3876f797d0496522f3afec26f8c)
Licence: BSD-3-Clause (LICENSE of the repository: "Copyright (c) 2024, Jonas Thies"; the
file's header says "You may redistribute it and/or modify it under the terms of the BSD-style
licence included in this software")
Path: kernels_gpu.py
Edits: none to the kernels. Only the kernels are copied, with the imports they use; the module's
other imports (scipy, sellcs, json), its host wrappers and its benchmark are left out.

Redistribution and use in source and binary forms, with or without modification, are permitted
provided that the following conditions are met: 1. Redistributions of source code must retain the
above copyright notice, this list of conditions and the following disclaimer. 2. Redistributions in
binary form must reproduce the above copyright notice, this list of conditions and the following
disclaimer in the documentation and/or other materials provided with the distribution. 3. Neither
the name of the copyright holder nor the names of its contributors may be used to endorse or
promote products derived from this software without specific prior written permission.
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
IMPLIED WARRANTIES ARE DISCLAIMED.
"""
import numpy as np
import numba
from numba import cuda, float64
from math import *


@cuda.jit
def cu_axpby(a,x,b,y):

    tx = cuda.threadIdx.x
    bx = cuda.blockIdx.x
    bdx = cuda.blockDim.x
    i = bx * bdx + tx
    if i < x.size:
        y[i]=a*x[i]+b*y[i]


@cuda.jit((float64[:],float64[:],float64[:]))
def cu_vscale(v, x, y):
    '''
    Vector scaling y[i] = v[i]*x[i]
    '''
    tx = cuda.threadIdx.x
    bx = cuda.blockIdx.x
    bdx = cuda.blockDim.x
    i = bx * bdx + tx
    if i < x.size:
        y[i] = v[i]*x[i]


@cuda.jit((float64[:],float64[:],float64[:]))
def cu_dot(x,y,s):

    tx = cuda.threadIdx.x
    bx = cuda.blockIdx.x
    bdx = cuda.blockDim.x

    # we perform the operation for all threads and then move to the next
    # chunk, where the chunk size (stride) is given by the total number
    # of threads:
    stride = cuda.gridDim.x*bdx

    s[0] = 0.0
    s_shared = cuda.shared.array(shape=(128), dtype=float64) # array with one element per thread in the block
    s_shared[tx] = 0.0
    s_local = 0.0 # scalar value per thread

    i = bx * bdx + tx
    while i < x.size:
        s_local += x[i]*y[i]
        i += stride
    s_shared[tx] = s_local
    cuda.syncthreads()

    i = tx
    stride = bdx//2
    while stride != 0:
        if i < stride:
            s_shared[i] += s_shared[i+stride]
        stride = stride//2
        cuda.syncthreads()

    if tx == 0:
        # atomic operation to avoid race condition,
        # thread 0 from each block sums it's local contribution
        # into s[0]:
        cuda.atomic.add(s, 0, s_shared[0])


@cuda.jit
def cu_csr_spmv(valA,rptrA,colA, x, y):
    tx = cuda.threadIdx.x
    bx = cuda.blockIdx.x
    bdx = cuda.blockDim.x
    i = bx * bdx + tx
    if i < x.size:
        y[i] = 0.0
        for j in range(rptrA[i], rptrA[i+1]):
            y[i] += valA[j]*x[colA[j]]


@cuda.jit
def cu_sell_spmv(valA, cptrA, colA, C, x, y):
    '''
    This kernel assumes that it is launched with the block size equal to the
    chunk-size C of the SELL-C-sigma matrix represented by [cptrA,valA,colA]
    '''
    tx = cuda.threadIdx.x
    chunk = cuda.blockIdx.x
    assert(C == cuda.blockDim.x)

    row   = chunk*C + tx
    offs  = cptrA[chunk]

    nchunks = len(cptrA)-1
    nrows = x.size

#    y_shared = cuda.shared.array(shape=(cuda.blockDim.x), dtype=float64) # array with one element per thread in the block
    y_shared = cuda.shared.array(shape=(128), dtype=float64) # array with one element per thread in the block

    if row>=nrows:
        return
    c = min(C,nrows-chunk*C)
    w    = (cptrA[chunk+1]-offs)//c
    y_shared[tx] = 0
    for j in range(w):
        y_shared[tx] += valA[offs+j*c+tx] * x[colA[offs+j*c+tx]]
    y[row] = y_shared[tx]


