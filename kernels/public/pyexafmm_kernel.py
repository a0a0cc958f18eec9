"""Public kernels: PyExaFMM's numba.cuda Laplace kernels, a Green's function 1 / (4 pi r) as a device
function and two kernels applying the implicit Gram matrix to a right-hand side (a shared-memory
tile of the right-hand side filled by a thread-dependent branch, block geometry shared through
one-element shared arrays written by thread 0, rows of 3-vectors bound to names, and an atomic add
of each thread's row sum).

Repository: https://github.com/exafmm/pyexafmm (commit 62f310d09eefbb90d84d024d90043dfb9a44997c)
Licence: BSD-3-Clause (LICENSE.md of the repository: "Copyright (c) 2019, exafmm")
Path: fmm/kernel.py
Edits: none to the kernels. Only the CUDA device function and kernels are copied, with the module
imports and the module constants BLOCK_WIDTH and BLOCK_HEIGHT they use; the CPU (numba.njit)
kernels of the file are left out. (A later commit of the repository commented these kernels out.)

Redistribution and use in source and binary forms, with or without modification, are permitted
provided that the conditions of the BSD 3-Clause License are met: redistributions of source code
must retain the above copyright notice, this list of conditions and the following disclaimer.
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
IMPLIED WARRANTIES ARE DISCLAIMED.
"""
import math

import numba
from numba import cuda
import numpy as np

# GPU Kernel parameters
BLOCK_WIDTH = 32
BLOCK_HEIGHT = 1024


@cuda.jit(device=True)
def laplace_cuda(ax, ay, az, bx, by, bz):
    """
    Numba-Cuda Laplace device kernel.

    Parameters:
    -----------
    ax : np.float32
        'x' coordinate of a point.
    ay : np.float32
        'y' coordinate of a point.
    az : np.float32
        'z' coordinate of a point.
    bx : np.float32
        'x' coordinate of a point.
    by : np.float32
        'y' coordinate of a point.
    bz : np.float32
        'z' coordinate of a point.

    Returns:
    --------
    nb.cuda.float32
    """
    rx = ax-bx
    ry = ay-by
    rz = az-bz

    dist = rx**2+ry**2+rz**2
    dist_sqr = math.sqrt(dist)
    inv_dist_sqr =  1./(4*math.pi*dist_sqr)

    if math.isinf(inv_dist_sqr):
        return 0.

    return numba.float32(inv_dist_sqr)


@cuda.jit
def laplace_implicit_gram_matrix(
        sources,
        targets,
        rhs,
        result,
        height,
        width,
        idx
    ):
    """
    Implicitly apply the Gram matrix to a vector, computing Green's function on
        the fly on the device, and multiplying by random matrices to approximate
        the basis. Multiple RHS are computed in a loop, specified by the index.

    Parameters:
    -----------
    sources : np.array(shape=(nsources, 3))
        nsources rows of gram matrix
    targets : np.array(shape=(ntargets, 3))
        ntargets columns of gram matrix
    rhs : np.array(shape=(ntargets, nrhs))
        Multiple right hand sides, indexed by 'idx'
    result : np.array(shape=(height, nrhs))
        Dimensions of result matrix defined by matrix height
        and number of right hand sides
    height : int
        'height' of implicit gram matrix. Defined by m, where
        m > n, and m is either ntargets or nsources.
    width : int
        'width' of implicit gram matrix.
    idx: int
        RHS index.
    """

    blockWidth = cuda.shared.array(1, numba.int32)
    blockxInd = cuda.shared.array(1, numba.int32)
    blockyInd = cuda.shared.array(1, numba.int32)

    # Calculate once, and share amongs thread-block
    if cuda.threadIdx.x == 0:
        if (cuda.blockIdx.x + 1)*BLOCK_WIDTH <= width:
            blockWidth[0] = numba.int32(BLOCK_WIDTH)
        else:
            blockWidth[0] = numba.int32(width % BLOCK_WIDTH)

        blockxInd[0] = numba.int32(cuda.blockIdx.x*BLOCK_WIDTH)
        blockyInd[0] = numba.int32(cuda.blockIdx.y*BLOCK_HEIGHT)

    cuda.syncthreads()

    # Extract tile of RHS, of size up to BLOCK_WIDTH
    tmp = cuda.shared.array(BLOCK_WIDTH, numba.float32)

    if cuda.threadIdx.x < blockWidth[0]:
        tmp[cuda.threadIdx.x] = rhs[idx][blockxInd[0]+cuda.threadIdx.x]

    cuda.syncthreads()

    # Accumulate matvec of tile into variable
    row_sum = 0

    threadyInd = blockyInd[0]+cuda.threadIdx.x

    if threadyInd < height:
        for i in range(blockWidth[0]):
            col_idx = blockxInd[0] + i
            row_idx = threadyInd
            source = sources[row_idx]
            target  = targets[col_idx]

            sx = source[0]
            sy = source[1]
            sz = source[2]

            tx = target[0]
            ty = target[1]
            tz = target[2]

            row_sum += laplace_cuda(sx, sy, sz, tx, ty, tz)*tmp[i]

    cuda.atomic.add(result, (threadyInd, idx), row_sum)


@cuda.jit
def laplace_implicit_gram_matrix_blocked(
        sources,
        targets,
        rhs,
        result,
        height,
        width,
        sub_height,
        sub_width,
        idx
    ):
    """
    Implicitly apply the Gram matrix to a vector, computing Green's function on
        the fly on the device, and multiplying by random matrices to approximate
        the basis. Multiple RHS are computed in a loop, specified by the index.
        This kernel assumes that the sources/targets specified by the user
        specify multiple Gram matrices, i.e. the global Gram matrix is 'blocked',

        e.g. gram = ((g_1) | (g_2) | ... | (g_{n-1}) | g_n)

        therefore, one additionally needs to specify the dimensions of the
        'sub' gram matrices in order to pick out the correct matrix elements
        for application to a given RHS.

    Parameters:
    -----------
    sources : np.array(shape=(nsources, 3), dtype=np.float32)
        nsources rows of gram matrix
    targets : np.array(shape=(ntargets, 3), dtype=np.float32)
        ntargets columns of gram matrix
    rhs : np.array(shape=(ntargets, nrhs), dtype=np.float32)
        Multiple right hand sides, indexed by 'idx'
    result : np.array(shape=(height, nrhs), dtype=np.float32)
        Dimensions of result matrix defined by matrix height
        and number of right hand sides
    height : np.int32
        'height' of global Gram matrix. Defined by m, where
        m > n, and m is either ntargets or nsources.
    width : np.int32
        'width' of Global gram matrix.
    sub_height : np.int32
        height of sub-Gram matrix. Defined by m, where
        m > n, and m is either ntargets or nsources.
    sub_width : np.int32
        'width' of sub-Gram matrix.
    idx: np.int32
        RHS index.
    """

    blockWidth = cuda.shared.array(1, numba.int32)
    blockxInd = cuda.shared.array(1, numba.int32)
    blockyInd = cuda.shared.array(1, numba.int32)

    # Calculate once, and share amongs thread-block
    if cuda.threadIdx.x == 0:
        if (cuda.blockIdx.x + 1)*BLOCK_WIDTH <= width:
            blockWidth[0] = numba.int32(BLOCK_WIDTH)
        else:
            blockWidth[0] = numba.int32(width % BLOCK_WIDTH)

        blockxInd[0] = numba.int32(cuda.blockIdx.x*BLOCK_WIDTH)
        blockyInd[0] = numba.int32(cuda.blockIdx.y*BLOCK_HEIGHT)

    cuda.syncthreads()

    # Extract tile of RHS, of size up to BLOCK_WIDTH
    tmp = cuda.shared.array(BLOCK_WIDTH, numba.float32)

    if cuda.threadIdx.x < blockWidth[0]:
        tmp[cuda.threadIdx.x] = rhs[idx][blockxInd[0]+cuda.threadIdx.x]

    cuda.syncthreads()

    # Accumulate matvec of tile into variable
    row_sum = 0

    threadyInd = blockyInd[0]+cuda.threadIdx.x
    threadxInd = blockxInd[0]+cuda.threadIdx.x

    # Find the index of the sub-Gram matrix, dependent on orientation.
    if sub_width == width:
        submatrixInd = numba.int32(math.floor(threadyInd/sub_height))*sub_width

    if sub_height == height:
        submatrixInd = numba.int32(math.floor(threadxInd/sub_width))*sub_height

    if threadyInd < height:
        for i in range(blockWidth[0]):
            col_idx = (blockxInd[0] + i)
            row_idx = threadyInd

            # Pick out matrix element for sub-Gram matrix
            if sub_width == width:
                source = sources[col_idx+submatrixInd]
                target  = targets[row_idx]

            elif sub_height == height:
                source = sources[col_idx]
                target = targets[row_idx+submatrixInd]

            sx = source[0]
            sy = source[1]
            sz = source[2]

            tx = target[0]
            ty = target[1]
            tz = target[2]

            row_sum += laplace_cuda(sx, sy, sz, tx, ty, tz)*tmp[i]

    cuda.atomic.add(result, (threadyInd, idx), row_sum)


