"""Public kernel: the kernel behind numba-cuda's cuda.reduce (grid-stride loop, warp-level tree
reduction through shared-memory row slices and cuda.syncwarp, a block-uniform branch on blockDim).

Repository: https://github.com/NVIDIA/numba-cuda (commit b18b944b2f88a4e840424e49a1b0d29488263b40)
Licence: BSD-2-Clause (SPDX header of the file; LICENSE of the repository)
Path: numba_cuda/numba/cuda/kernels/reduction.py (_gpu_reduce_factory)
Edits: the factory's body is unrolled to module level for one instance, the documented sum
(docs/source/user/reduction.rst: cuda.reduce(lambda a, b: a + b)) over float64: fn is that lambda,
nbtype = float64, and reduce_op, inner_sm_size, max_blocksize are the factory's own statements at
module level; the device functions and the kernel gpu_reduce_block_strided are unchanged (the
factory returns cuda.jit(gpu_reduce_block_strided); here it is decorated). Reduce's host wrapper,
which launches it twice (partials, then the final), is not ported: a case is one launch.
"""
# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
from numba import cuda
from numba.cuda import float64

_WARPSIZE = 32
_NUMWARPS = 4

fn = lambda a, b: a + b  # noqa: E731  (the documented cuda.reduce example)
nbtype = float64

reduce_op = cuda.jit(device=True)(fn)
inner_sm_size = _WARPSIZE + 1  # plus one to avoid SM collision
max_blocksize = _NUMWARPS * _WARPSIZE


@cuda.jit(device=True)
def inner_warp_reduction(sm_partials, init):
    """
    Compute reduction within a single warp
    """
    tid = cuda.threadIdx.x
    warpid = tid // _WARPSIZE
    laneid = tid % _WARPSIZE

    sm_this = sm_partials[warpid, :]
    sm_this[laneid] = init
    cuda.syncwarp()

    width = _WARPSIZE // 2
    while width:
        if laneid < width:
            old = sm_this[laneid]
            sm_this[laneid] = reduce_op(old, sm_this[laneid + width])
        cuda.syncwarp()
        width //= 2
@cuda.jit(device=True)
def device_reduce_full_block(arr, partials, sm_partials):
    """
    Partially reduce `arr` into `partials` using `sm_partials` as working
    space.  The algorithm goes like:

        array chunks of 128:  |   0 | 128 | 256 | 384 | 512 |
                    block-0:  |   x |     |     |   x |     |
                    block-1:  |     |   x |     |     |   x |
                    block-2:  |     |     |   x |     |     |

    The array is divided into chunks of 128 (size of a threadblock).
    The threadblocks consumes the chunks in roundrobin scheduling.
    First, a threadblock loads a chunk into temp memory.  Then, all
    subsequent chunks are combined into the temp memory.

    Once all chunks are processed.  Inner-block reduction is performed
    on the temp memory.  So that, there will just be one scalar result
    per block.  The result from each block is stored to `partials` at
    the dedicated slot.
    """
    tid = cuda.threadIdx.x
    blkid = cuda.blockIdx.x
    blksz = cuda.blockDim.x
    gridsz = cuda.gridDim.x

    # block strided loop to compute the reduction
    start = tid + blksz * blkid
    stop = arr.size
    step = blksz * gridsz

    # load first value
    tmp = arr[start]
    # loop over all values in block-stride
    for i in range(start + step, stop, step):
        tmp = reduce_op(tmp, arr[i])

    cuda.syncthreads()
    # inner-warp reduction
    inner_warp_reduction(sm_partials, tmp)

    cuda.syncthreads()
    # at this point, only the first slot for each warp in tsm_partials
    # is valid.

    # finish up block reduction
    # warning: this is assuming 4 warps.
    # assert numwarps == 4
    if tid < 2:
        sm_partials[tid, 0] = reduce_op(
            sm_partials[tid, 0], sm_partials[tid + 2, 0]
        )
        cuda.syncwarp()
    if tid == 0:
        partials[blkid] = reduce_op(sm_partials[0, 0], sm_partials[1, 0])

@cuda.jit(device=True)
def device_reduce_partial_block(arr, partials, sm_partials):
    """
    This computes reduction on `arr`.
    This device function must be used by 1 threadblock only.
    The blocksize must match `arr.size` and must not be greater than 128.
    """
    tid = cuda.threadIdx.x
    blkid = cuda.blockIdx.x
    blksz = cuda.blockDim.x
    warpid = tid // _WARPSIZE
    laneid = tid % _WARPSIZE

    size = arr.size
    # load first value
    tid = cuda.threadIdx.x
    value = arr[tid]
    sm_partials[warpid, laneid] = value

    cuda.syncthreads()

    if (warpid + 1) * _WARPSIZE < size:
        # fully populated warps
        inner_warp_reduction(sm_partials, value)
    else:
        # partially populated warps
        # NOTE: this uses a very inefficient sequential algorithm
        if laneid == 0:
            sm_this = sm_partials[warpid, :]
            base = warpid * _WARPSIZE
            for i in range(1, size - base):
                sm_this[0] = reduce_op(sm_this[0], sm_this[i])

    cuda.syncthreads()
    # finish up
    if tid == 0:
        num_active_warps = (blksz + _WARPSIZE - 1) // _WARPSIZE

        result = sm_partials[0, 0]
        for i in range(1, num_active_warps):
            result = reduce_op(result, sm_partials[i, 0])

        partials[blkid] = result


@cuda.jit
def gpu_reduce_block_strided(arr, partials, init, use_init):
    """
    Perform reductions on *arr* and writing out partial reduction result
    into *partials*.  The length of *partials* is determined by the
    number of threadblocks. The initial value is set with *init*.

    Launch config:

    Blocksize must be multiple of warpsize and it is limited to 4 warps.
    """
    tid = cuda.threadIdx.x

    sm_partials = cuda.shared.array(
        (_NUMWARPS, inner_sm_size), dtype=nbtype
    )
    if cuda.blockDim.x == max_blocksize:
        device_reduce_full_block(arr, partials, sm_partials)
    else:
        device_reduce_partial_block(arr, partials, sm_partials)
    # deal with the initializer
    if use_init and tid == 0 and cuda.blockIdx.x == 0:
        partials[0] = reduce_op(partials[0], init)
