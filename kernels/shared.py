"""Shared memory, barriers, atomics and warp shuffles in the primal."""
from numba import cuda, float32, float64


def stage_through_shared(A, Aout):
    """KernelAbstractions issue 480: sh[lid] = A[gid]; sync; Aout[gid] = sh[lid]."""
    sh = cuda.shared.array(32, float32)
    lid = cuda.threadIdx.x
    gid = cuda.grid(1)
    sh[lid] = A[gid]
    cuda.syncthreads()
    Aout[gid] = sh[lid]


def neighbour_through_shared(A, Aout):
    """Values passed between threads: each thread reads its right neighbour's staged value."""
    sh = cuda.shared.array(64, float64)
    lid = cuda.threadIdx.x
    gid = cuda.grid(1)
    sh[lid] = A[gid] * A[gid]
    cuda.syncthreads()
    right = (lid + 1) % cuda.blockDim.x
    Aout[gid] = sh[right] + 0.5 * sh[lid]


def block_sum(out, x):
    """A tree reduction in shared memory with a barrier per level, then one atomic per block."""
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = x[i] * x[i]
    sh[t] = v
    cuda.syncthreads()
    for s in (32, 16, 8, 4, 2, 1):
        if t < s:
            sh[t] += sh[t + s]
        cuda.syncthreads()
    if t == 0:
        cuda.atomic.add(out, 0, sh[0])


def warp_sum(out, x):
    """A warp reduction with shfl_down_sync; lane 0 of each warp adds its warp's sum."""
    i = cuda.grid(1)
    v = x[i] * x[i]
    for d in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, d)
    if cuda.laneid == 0:
        cuda.atomic.add(out, 0, v)


def warp_butterfly(out, x):
    """shfl_xor_sync butterfly: every lane ends with its warp's sum; each writes its own slot."""
    i = cuda.grid(1)
    v = x[i]
    for m in (16, 8, 4, 2, 1):
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, m)
    out[i] = v * x[i]


def broadcast_lane(out, x):
    """shfl_sync from lane 3: every lane multiplies by lane 3's value."""
    i = cuda.grid(1)
    v = x[i]
    b = cuda.shfl_sync(0xFFFFFFFF, v, 3)
    out[i] = v * b


def shifted_up(out, x):
    i = cuda.grid(1)
    v = x[i]
    u = cuda.shfl_up_sync(0xFFFFFFFF, v, 2)
    out[i] = u * v


def sum_add_const(out, x, y):
    """CUDA.jl issue 2455: sum(x .+ y) with y Const, as one kernel: atomics in the primal."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i] + y[i])


def histogram_max(out, x):
    """out[0] = max(out[0], x[0..n]) by atomic max; the derivative flows to the winning thread."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.max(out, 0, x[i] * x[i])


def bucket_min(out, x, bucket):
    """Per-bucket minimum of 2 x[i] + 1 with atomic min (several winners, one per bucket)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.min(out, bucket[i], 2.0 * x[i] + 1.0)


def max_then_read(out, x, y):
    """atomic max, then a read of the same array: which value wins is not the atomic's alone."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.max(out, 0, x[i])
        y[i] = out[0]


def local_scratch(out, x):
    """A per-thread local array as scratch space."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        tmp = cuda.local.array(4, float64)
        for k in range(4):
            tmp[k] = x[i] * (k + 1)
        out[i] = tmp[0] * tmp[3] + tmp[1] * tmp[2]


def local_scratch_dynamic(out, x, m):
    """The dynamic twin: the scratch array is filled in a loop over a kernel argument."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        tmp = cuda.local.array(4, float64)
        for k in range(m):
            tmp[k] = x[i] * (k + 1)
        out[i] = tmp[0] * tmp[3] + tmp[1] * tmp[2]


def max_of_scaled(out, x):
    """A float64 value into a float32 array: the winner is found in the array's precision."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.max(out, 0, x[i] * 1.5)
