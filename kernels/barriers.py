"""Barriers in block-uniform control flow: loops and conditions whose trip
count or value is the same for every thread of a block may contain cuda.syncthreads()."""
from numba import cuda, float32, float64



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


# fast_matmul from NVIDIA/numba-cuda, numba_cuda/numba/cuda/tests/doc_examples/test_matmul.py
# (commit 071e82e1880f3eea875f3981622cf9ac83de955e, BSD-2-Clause, the kernel of numba-cuda's
# documentation). Edits: `cuda.shared.array(shape=(TPB, TPB), dtype=float32)` written with
# positional literal arguments (keyword forms and module-constant shapes were not yet supported
# when it was ported); TPB = 16 written as the literal 16 in the loop and indices; the float64
# twin below has float64 tiles and accumulator (float32 tiles in a float64 run would leave the
# finite-difference oracle float32 noise).
def fast_matmul(A, B, C):
    sA = cuda.shared.array((16, 16), float32)
    sB = cuda.shared.array((16, 16), float32)

    x, y = cuda.grid(2)

    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x  # blocks per grid

    tmp = float32(0.0)
    for i in range(bpg):
        # Preload data into shared memory
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * 16) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * 16]
        if x < B.shape[1] and (ty + i * 16) < B.shape[0]:
            sB[ty, tx] = B[ty + i * 16, x]

        # Wait until all threads finish preloading
        cuda.syncthreads()

        # Computes partial product on the shared memory
        for j in range(16):
            tmp += sA[ty, j] * sB[j, tx]

        # Wait until all threads finish computing
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp


def fast_matmul_f64(A, B, C):
    """fast_matmul with float64 tiles and accumulator."""
    sA = cuda.shared.array((16, 16), float64)
    sB = cuda.shared.array((16, 16), float64)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    tmp = 0.0
    for i in range(bpg):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * 16) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * 16]
        if x < B.shape[1] and (ty + i * 16) < B.shape[0]:
            sB[ty, tx] = B[ty + i * 16, x]
        cuda.syncthreads()
        for j in range(16):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp


def stride_tiles(out, x, n):
    """Barriers in a grid-stride loop over tiles: the loop starts at the block's first element and
    advances by the grid size, so its trip count is the same for every thread of a block."""
    sm = cuda.shared.array(64, float64)
    tid = cuda.threadIdx.x
    for base in range(cuda.blockIdx.x * cuda.blockDim.x, n, cuda.gridsize(1)):
        i = base + tid
        v = 0.0
        if i < n:
            v = x[i]
        sm[tid] = v
        cuda.syncthreads()
        if i < n:
            out[i] = v * sm[(tid + 1) % 64]
        cuda.syncthreads()


def nbody_tiles(acc, pos, n):
    """An n-body style tile loop: each tile of 16 positions is loaded into shared memory, a
    barrier, an inner loop over the tile, a barrier. The tile loop's range depends on n and
    blockDim.x only."""
    tile = cuda.shared.array(16, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    p = 0.0
    if i < n:
        p = pos[i]
    a = 0.0
    for start in range(0, n, cuda.blockDim.x):
        tile[tid] = 0.0
        if start + tid < n:
            tile[tid] = pos[start + tid]
        cuda.syncthreads()
        for j in range(16):
            d = tile[j] - p
            a += d / (d * d + 0.5) ** 1.5
        cuda.syncthreads()
    if i < n:
        acc[i] = a


def rounds_of_neighbour_mixing(out, x, rounds):
    """Siblings of the uniform-loop barrier fix: the trip count is a scalar argument (uniform), each
    round exchanges values between neighbouring threads through shared memory (two barriers a round),
    so a wrong per-iteration shared state in the reverse sweep shows in every element."""
    sm = cuda.shared.array(32, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else 0.0
    for r in range(rounds):
        sm[tid] = v
        cuda.syncthreads()
        v = 0.5 * v + 0.25 * sm[(tid + 1) % cuda.blockDim.x] * sm[(tid + 1) % cuda.blockDim.x]
        cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = v


def column_tiles_2d(out, a):
    """A 2-D launch: each block walks the grid's y extent in tiles (`for t in range(cuda.gridDim.y)`),
    staging a tile of a in shared memory between two barriers; out[y, x] sums a[t*8 + ty, x]^2 over tiles."""
    sm = cuda.shared.array((8, 8), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    acc = float32(0.0)
    for t in range(cuda.gridDim.y):
        row = t * 8 + ty
        sm[ty, tx] = a[row, x] if row < a.shape[0] and x < a.shape[1] else float32(0.0)
        cuda.syncthreads()
        acc += sm[(ty + 1) % 8, tx] * sm[ty, tx]
        cuda.syncthreads()
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = acc


# Shared tiles the reverse sweep replays (harness/engine/analyses/shared_replay.py) and their siblings that
# keep the tape: the gradient must be right either way.

def tile_loop_nested_dynamic(out, x, n):
    """A tile staged every iteration (zeroed, then loaded where in range), read by a loop over
    blockDim.x nested in the tile loop (the n-body form): the reverse sweep replays the tile."""
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    p = x[i] if i < n else 0.0
    acc = 0.0
    for start in range(0, n, cuda.blockDim.x):
        tile[t] = 0.0
        if start + t < n:
            tile[t] = x[start + t]
        cuda.syncthreads()
        for k in range(cuda.blockDim.x):
            d = tile[k] - p
            acc += d * d * tile[k]
        cuda.syncthreads()
    if i < n:
        out[i] = acc


def tile_index_in_the_loop(out, x, rounds):
    """The tile's index is computed inside the loop but is the same every iteration; the stored
    value comes from a carried register, so the replay needs the restored register."""
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else 0.0
    for r in range(rounds):
        k = t % 32
        tile[k] = v * v
        cuda.syncthreads()
        v = 0.5 * v + tile[(k + 3) % 32] * 0.25
        cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = v


def tile_stored_under_condition(out, x, rounds):
    """Sibling that keeps the tape: each round writes its element only where (t + r) % 3 != 0, so a
    round reads elements the round before wrote (a replay of one round alone would not rebuild them)."""
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else 0.0
    tile[t] = 0.0
    cuda.syncthreads()
    for r in range(rounds):
        if (t + r) % 3 != 0:
            tile[t] = v * (r + 1)
        cuda.syncthreads()
        v = 0.5 * v + 0.25 * tile[(t + 1) % 32] * v
        cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = v


def tile_nested_under_condition(out, x, rounds, width):
    """The tile of tile_stored_under_condition read by a dynamic loop nested in the round loop: the
    replay of one round cannot rebuild the tile, and the inner loop's reads cannot sit on the
    round's tape, so the forward sweep logs them in order and each round's replay reads the log."""
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else 0.0
    tile[t] = 0.0
    cuda.syncthreads()
    for r in range(rounds):
        if (t + r) % 3 != 0:
            tile[t] = v * (r + 1)
        cuda.syncthreads()
        for k in range(width):
            v = 0.5 * v + 0.125 * tile[(t + k + 1) % 32] * v
        cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = v


def tile_index_moves(out, x, rounds):
    """Sibling that keeps the tape: a 32-thread block writes half of a 64-element tile, a different
    half each round, and reads elements the round before wrote."""
    tile = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else 0.0
    tile[t] = 0.0
    tile[t + 32] = 0.0
    cuda.syncthreads()
    for r in range(rounds):
        tile[(t + 8 * r) % 64] = v
        cuda.syncthreads()
        v = v * 0.5 + tile[t] * tile[(t + 40) % 64]
        cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = v


def tile_read_before_store(out, x, rounds):
    """Sibling that keeps the tape: each round reads its own element of the previous round's tile
    before storing the new one."""
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else 0.0
    tile[t] = v
    cuda.syncthreads()
    for r in range(rounds):
        w = tile[t]
        tile[t] = w * v
        cuda.syncthreads()
        v = v + 0.25 * tile[(t + 1) % 32]
        cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = v


def tree_sum_halving_linear(out, x):
    """The halving tree of kernels/tiled.py:tree_sum_while in float64: a linear level
    (sh[t] += sh[t + s]), one atomic per block. In each level thread t < s alone touches t and
    t + s, so the reverse adds into the shared shadow without atomics."""
    sm = cuda.shared.array(64, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = x[i] * x[i]
    sm[tid] = v
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sm[tid] += sm[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, sm[0])


def tree_rows_2d(out, x):
    """Row sums over a 2-D block: each row of threads halves its own row of the shared array
    (stride along x); the rows' elements are told apart by threadIdx.y."""
    sm = cuda.shared.array((4, 16), float64)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r = cuda.blockIdx.x * cuda.blockDim.y + ty
    sm[ty, tx] = x[r, tx] * x[r, tx]
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tx < s:
            sm[ty, tx] += sm[ty, tx + s]
        cuda.syncthreads()
        s //= 2
    if tx == 0:
        out[r] = sm[ty, 0]


def tree_then_normalize(out, x):
    """A block sum by a halving tree, then every thread reads the sum (sm[0]) after the last
    level: many threads read one element in one interval, so its adjoint keeps the atomics."""
    sm = cuda.shared.array(64, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = x[i] * x[i]
    sm[tid] = v
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sm[tid] += sm[tid + s]
        cuda.syncthreads()
        s //= 2
    if i < x.shape[0]:
        out[i] = x[i] / (1.0 + sm[0])
