"""Barriers in block-uniform control flow (issue 22 item 2): loops and conditions whose trip
count or value is the same for every thread of a block may contain cuda.syncthreads()."""
from numba import cuda, float64



def tree_sum_doubling(out, x):
    """The shared-memory tree reduction in a while loop whose stride doubles (s = 1, 2, 4, ...
    up to blockDim.x): the loop's condition depends on blockDim.x only."""
    sm = cuda.shared.array(64, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = x[i] * x[i]
    sm[tid] = v
    cuda.syncthreads()
    s = 1
    while s < cuda.blockDim.x:
        if tid % (2 * s) == 0:
            sm[tid] += sm[tid + s]
        cuda.syncthreads()
        s *= 2
    if tid == 0:
        out[cuda.blockIdx.x] = sm[0]


def tree_sum_halving(out, x):
    """The halving variant: s = blockDim.x // 2; while s > 0: ...; s //= 2."""
    sm = cuda.shared.array(64, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = x[i] * 3.0
    sm[tid] = v
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sm[tid] += sm[tid + s] * sm[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = sm[0]


def reduce_if_full_block(out, x):
    """A reduction under the block-uniform `if cuda.blockDim.x == 64:` (numba's cuda.reduce
    kernel picks its full-block path that way); the other branch has no barrier."""
    sm = cuda.shared.array(64, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    if cuda.blockDim.x == 64:
        sm[tid] = x[i] * x[i]
        cuda.syncthreads()
        if tid < 32:
            sm[tid] += sm[tid + 32]
        cuda.syncthreads()
        if tid == 0:
            acc = 0.0
            for k in range(32):
                acc += sm[k]
            out[cuda.blockIdx.x] = acc
    else:
        cuda.atomic.add(out, cuda.blockIdx.x, x[i] * x[i])


def barrier_thread_dependent(out, x):
    """A barrier under a condition on threadIdx: undefined behaviour on a GPU, refused."""
    sm = cuda.shared.array(64, float64)
    tid = cuda.threadIdx.x
    sm[tid] = x[cuda.grid(1)]
    if tid < 16:
        cuda.syncthreads()
    out[cuda.grid(1)] = sm[(tid + 1) % 64]
