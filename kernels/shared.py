"""Shared memory, barriers, atomics and warp shuffles in the primal."""
import math

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


def nan_skipping_extrema(hi, lo, x, keep):
    """hi[b] = nanmax over the kept x[i]^2 of bucket b, lo[b] = nanmin of sin(x[i]); a dropped
    element contributes NaN, which nanmax/nanmin skip (max/min would keep it)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        b = i % hi.shape[0]
        v = x[i] * x[i] if keep[i] else math.nan
        cuda.atomic.nanmax(hi, b, v)
        cuda.atomic.nanmin(lo, b, math.sin(x[i]) if keep[i] else math.nan)


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


@cuda.jit(device=True)
def _atomic_max_returning_old(ary, idx, val):
    return cuda.atomic.max(ary, idx, val)


def max_through_helper(out, x):
    """out[i % 4] = max over x[i]^2 through a helper that returns the atomic's old value, which the
    kernel drops (Datashader's cuda_atomic_nanmax wrappers are written this way)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        _atomic_max_returning_old(out, i % out.shape[0], x[i] * x[i])


def clip_by_atomics(data, lower, upper):
    """data[i] clipped to [lower[i], upper[i]] by atomic max then atomic min on the thread's own
    element: the two atomics run in its program order, and the final value is one contribution or
    the initial value (Datashader's masked clip, through plain atomics)."""
    i = cuda.grid(1)
    if i < data.shape[0]:
        cuda.atomic.max(data, i, lower[i])
        cuda.atomic.min(data, i, upper[i])


def clip_shared_by_atomics(data, lower, upper):
    """The same on elements that threads share (i % n): max and min from different threads
    interleave in any order."""
    i = cuda.grid(1)
    if i < lower.shape[0]:
        cuda.atomic.max(data, i % data.shape[0], lower[i])
        cuda.atomic.min(data, i % data.shape[0], upper[i])


def own_max_then_add(data, lower, x):
    """On one thread's own element: atomic max, then atomic add (the final value is no single
    contribution, so the winner's rule does not hold)."""
    i = cuda.grid(1)
    if i < data.shape[0]:
        cuda.atomic.max(data, i, lower[i])
        cuda.atomic.add(data, i, x[i] * x[i])
