"""Kernels whose reverse sums many per-thread contributions into a few addresses: coefficients
read by every thread (uniform-index reads) next to Active scalars, in full and partial warps."""
from numba import cuda, float64


def scaled_quintic(out, x, c, alpha):
    """Five coefficients and an Active scale: six sums reduced together (padded to eight)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        out[i] = alpha * (c[0] + t * (c[1] + t * (c[2] + t * (c[3] + t * c[4]))))


def long_polynomial(out, x, c):
    """A static loop over 34 coefficients: 34 uniform-index sums, more than one warp holds."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        acc = 0.0
        for k in range(34):
            acc = acc * t + c[k]
        out[i] = acc


# ---- block-coarsened reverse kernels (harness/engine/emission/coarsen.py): grids larger than the simulator's
# two physical blocks, so each physical block runs several virtual blocks before it reduces


def ragged_horner(out, x, c, n):
    """An early return past n: in a coarsened reverse it must end only that virtual block's work."""
    i = cuda.grid(1)
    if i >= n:
        return
    t = x[i]
    out[i] = c[0] + t * (c[1] + t * (c[2] + t * c[3]))


def weighted_2d(out, x, w):
    """A 2-D grid reading blockIdx.y and gridDim.x directly: both must be the virtual block's."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = w[0] * x[i, j] + w[1] * x[i, j] * (cuda.blockIdx.y + 1.0) / cuda.gridDim.x


def weighted_3d(out, x, w):
    """A 3-D grid: the linear virtual block id is decomposed into x, y and z."""
    i, j, k = cuda.grid(3)
    if i < out.shape[0] and j < out.shape[1] and k < out.shape[2]:
        out[i, j, k] = w[0] * x[i, j, k] + w[1] * (cuda.blockIdx.z + 2.0 * cuda.blockIdx.y)


def grid_stride_weights(out, x, c):
    """A grid-stride loop: its start and stride are the virtual thread's index and grid size."""
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        t = x[i]
        out[i] = c[0] * t + c[1] * t * t


def shared_weighted_neighbours(out, x, w):
    """Shared memory and a barrier: each virtual block stages its values and reads a neighbour's."""
    sh = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = x[i]
    sh[t] = v * v
    cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = w[0] * sh[t] + w[1] * sh[(t + 1) % cuda.blockDim.x]


def warp_weighted_sum(out, x, w):
    """A weight and a warp shuffle: not coarsened (coarsen.refusal), one physical block per block."""
    i = cuda.grid(1)
    v = w[0] * x[i]
    for d in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, d)
    if cuda.laneid == 0:
        cuda.atomic.add(out, 0, v)
