"""Public kernels: ENCCS's "High Performance Data Analytics in Python" lesson, its numba.cuda examples
and exercise solutions (elementwise math with and without a device function, naive matrix
products in two spellings, a 2-D Laplace stencil in two spellings, a float32 accumulator, a
shared-memory tiled matrix product).

Repository: https://github.com/ENCCS/hpda-python (commit 7c33127e39fed9e6639b7f455f7b87264f74d5ad)
Licence: MIT (LICENSE.code of the repository: "Copyright (c) 2024, ENCCS and individual contributors";
the lesson text is CC-BY-4.0)
Paths: content/example/math_kernel.py, content/example/math_kernel_devicefunction.py,
content/example/matmul_kernel.py, content/exercise/lap2d_cuda.py,
content/exercise/matmul_dtype_solution.py, content/exercise/matmul_sm_solution.py (one section each,
marked below)
Edits: none to the kernels. Only the kernels are copied: the files' benchmark code around them
(IPython `%timeit` lines, array set-up) is left out; `TPB = 16` is the module constant of
matmul_sm_solution.py, copied with its kernel.

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions: The above copyright notice and this
permission notice shall be included in all copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""
import math

import numba
import numba.cuda


# ---- content/example/math_kernel.py


@numba.cuda.jit
def math_kernel(x, y, result): # numba.cuda.jit does not return result yet
    pos = numba.cuda.grid(1)
    if (pos < x.shape[0]) and (pos < y.shape[0]):
        result[pos] = math.pow(x[pos],3.0) + 4*math.sin(y[pos])


# ---- content/example/math_kernel_devicefunction.py


@numba.cuda.jit(device=True)
def math_device(a, b):
    a = math.exp(a*b)
    return a

@numba.cuda.jit
def math_kernel_devicefunction(a, b, result): # cuda.jit does not return result yet
    pos = numba.cuda.grid(1)
    if (pos < a.shape[0]) and (pos < b.shape[0]):
        result[pos] = math_device(a[pos], b[pos])


# ---- content/example/matmul_kernel.py


@numba.cuda.jit
def matmul_kernel(A, B, C):
    i, j = numba.cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        tmp = 0.
        for k in range(A.shape[1]):
            tmp += A[i, k] * B[k, j]
        C[i, j] = tmp

@numba.cuda.jit
def matmul_kernel2(A, B, C):

    tx = numba.cuda.threadIdx.x
    ty = numba.cuda.threadIdx.y
    bx = numba.cuda.blockIdx.x
    by = numba.cuda.blockIdx.y
    bw = numba.cuda.blockDim.x
    bh = numba.cuda.blockDim.y

    i = tx + bx * bw
    j = ty + by * bh

    if i < C.shape[0] and j < C.shape[1]:
        tmp = 0.
        for k in range(A.shape[1]):
            tmp += A[i, k] * B[k, j]
        C[i, j] = tmp


# ---- content/exercise/lap2d_cuda.py


@numba.cuda.jit()
def lap2d_cuda(u, unew):
    M, N = u.shape     
    i, j = numba.cuda.grid(2)
    if i>=1 and i < M-1 and j >=1 and j < N-1 :
        unew[i, j] = 0.25 * ( u[i+1, j] + u[i-1, j] + u[i, j+1] + u[i, j-1] )   

@numba.cuda.jit()
def lap2d_cuda2(u, unew):
    M, N = u.shape     
    i = numba.cuda.threadIdx.x + numba.cuda.blockIdx.x * numba.cuda.blockDim.x
    j = numba.cuda.threadIdx.y + numba.cuda.blockIdx.y * numba.cuda.blockDim.y

    if i>=1 and i < M-1 and j >=1 and j < N-1 :
        unew[i, j] = 0.25 * ( u[i+1, j] + u[i-1, j] + u[i, j+1] + u[i, j-1] )


# ---- content/exercise/matmul_dtype_solution.py


@numba.cuda.jit
def matmul_kernel_float32(A, B, C):
    i, j = numba.cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        tmp = numba.float32(0.)
        for k in range(A.shape[1]):
            tmp += A[i, k] * B[k, j]
        C[i, j] = tmp


# ---- content/exercise/matmul_sm_solution.py


TPB = 16


@numba.cuda.jit
def matmul_sm(A, B, C):
    # Define an array in the shared memory
    # The size and type of the arrays must be known at compile time
    sA = numba.cuda.shared.array(shape=(TPB, TPB), dtype=numba.float64)
    sB = numba.cuda.shared.array(shape=(TPB, TPB), dtype=numba.float64)

    x, y = numba.cuda.grid(2)

    tx = numba.cuda.threadIdx.x
    ty = numba.cuda.threadIdx.y
    bpg = numba.cuda.gridDim.x    # blocks per grid

    # Each thread computes one element in the result matrix.
    # The dot product is chunked into dot products of TPB-long vectors.
    tmp = 0.
    for i in range(bpg):
        # Preload data into shared memory
        sA[tx, ty] = 0
        sB[tx, ty] = 0
        if x < A.shape[0] and (ty+i*TPB) < A.shape[1]:
          sA[tx, ty] = A[x, ty + i * TPB]
        if y < B.shape[1] and (tx+i*TPB) < B.shape[0]:
          sB[tx, ty] = B[tx + i * TPB, y]

        # Wait until all threads finish preloading
        numba.cuda.syncthreads()

        # Computes partial product on the shared memory
        for j in range(TPB):
            tmp += sA[tx, j] * sB[j, ty]

        # Wait until all threads finish computing
        numba.cuda.syncthreads()
    if x < C.shape[0] and y < C.shape[1]:
        C[x, y] = tmp
