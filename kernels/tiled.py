"""Block-level kernels of the kind GPU programmers write first: a shared-memory tiled matrix
product, a tree reduction in a `while` loop, and an n-body tile loop. Each has barriers inside a
loop whose trip count is uniform across a block (blockDim, gridDim, module constants), which the
engine must differentiate through. `harness bench` times their derivatives against hand-written
adjoints (harness/bench/reference.py), cupy's matrix products and JAX."""
import math

from numba import cuda, float32

TILE = 16          # threads per block side of the matrix product; shared tiles TILE x TILE
BODIES = 64        # bodies per tile of the n-body loop (its block size)
SOFTENING = 0.01


def tiled_matmul(A, B, C):
    """C = A @ B for square matrices, one output element per thread, A and B staged through
    shared memory one TILE x TILE tile at a time (one tile step per block of the grid's x axis)."""
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    col, row = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    n = A.shape[0]
    acc = float32(0.0)
    for step in range(cuda.gridDim.x):
        k = step * TILE
        sa[ty, tx] = A[row, k + tx] if row < n and k + tx < n else float32(0.0)
        sb[ty, tx] = B[k + ty, col] if col < n and k + ty < n else float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < n and col < n:
        C[row, col] = acc


def tree_sum_while(out, x):
    """out[0] += sum of x^2: each block halves its partial sums in shared memory with a `while`
    loop over the stride (a barrier per level), then one atomic per block."""
    sh = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = float32(0.0)
    if i < x.shape[0]:
        v = x[i] * x[i]
    sh[t] = v
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            sh[t] += sh[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        cuda.atomic.add(out, 0, sh[0])


def nbody_accel(pos, mass, acc):
    """acc[i] = sum_j mass[j] (pos[j] - pos[i]) / (|pos[j] - pos[i]|^2 + SOFTENING)^1.5: bodies
    staged through shared memory one tile of BODIES at a time."""
    sp = cuda.shared.array((BODIES, 3), float32)
    sm = cuda.shared.array(BODIES, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    n = pos.shape[0]
    xi = pos[i, 0] if i < n else float32(0.0)
    yi = pos[i, 1] if i < n else float32(0.0)
    zi = pos[i, 2] if i < n else float32(0.0)
    ax = float32(0.0)
    ay = float32(0.0)
    az = float32(0.0)
    for tile in range(cuda.gridDim.x):
        j = tile * BODIES + t
        sp[t, 0] = pos[j, 0] if j < n else float32(0.0)
        sp[t, 1] = pos[j, 1] if j < n else float32(0.0)
        sp[t, 2] = pos[j, 2] if j < n else float32(0.0)
        sm[t] = mass[j] if j < n else float32(0.0)
        cuda.syncthreads()
        for k in range(BODIES):
            dx = sp[k, 0] - xi
            dy = sp[k, 1] - yi
            dz = sp[k, 2] - zi
            r2 = dx * dx + dy * dy + dz * dz + float32(SOFTENING)
            w = sm[k] / (r2 * math.sqrt(r2))
            ax += w * dx
            ay += w * dy
            az += w * dz
        cuda.syncthreads()
    if i < n:
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az
