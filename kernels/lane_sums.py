"""Reads that every thread of a block row makes at one address: each row of a block stages its row
of weights in shared memory and all the row's threads read the same weights (`sw[ty, k]`), as the
tiled matrix product reads `sa[ty, j]` and the n-body tile loop `sp[k, 0]`. In reverse every
thread of the row adds into the same shadow element; the engine sums the row's lanes with warp
shuffles first (harness/engine/emission/emit_lane_sums.py), or keeps one atomic per thread where
blockDim.x is neither a power of two up to 32 nor a multiple of 32.

out[r, c] = sum_k w[r, k] x[r, c]^(k+1) + w[r, TAPS] x[r, c]^2 (a polynomial per row without a
constant term, and a second read of the same row at another weight)."""
from numba import cuda, float64

ROWS = 8          # rows of the shared weight tile: blockDim.y at most
TAPS = 4
COLS = TAPS + 1   # the shared tile: TAPS weights and the square term's


def row_weights(out, x, w):
    """The taps in an unrolled loop: one straight run of row-uniform reads per thread."""
    sw = cuda.shared.array((ROWS, COLS), float64)
    c, r = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    m, n = x.shape
    if tx < COLS:
        sw[ty, tx] = w[r, tx] if r < m else float64(0.0)
    cuda.syncthreads()
    v = x[r, c] if r < m and c < n else float64(0.0)
    acc = sw[ty, TAPS] * v * v
    p = v
    for k in range(TAPS):
        acc += sw[ty, k] * p
        p *= v
    if r < m and c < n:
        out[r, c] = acc


def row_weights_dynamic(out, x, w, taps):
    """The same with a trip count from a scalar argument: a dynamic loop, block-uniform, whose
    reverse sweep sums each iteration's read over the row."""
    sw = cuda.shared.array((ROWS, COLS), float64)
    c, r = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    m, n = x.shape
    if tx < COLS:
        sw[ty, tx] = w[r, tx] if r < m else float64(0.0)
    cuda.syncthreads()
    v = x[r, c] if r < m and c < n else float64(0.0)
    acc = sw[ty, TAPS] * v * v
    p = v
    for k in range(taps):
        acc += sw[ty, k] * p
        p *= v
    if r < m and c < n:
        out[r, c] = acc


def row_weights_global(out, x, w):
    """The weights read from global memory at the row's index, no shared tile: the shadow the row
    adds into is a global array's."""
    c, r = cuda.grid(2)
    m, n = x.shape
    rr = r if r < m else 0
    v = x[r, c] if r < m and c < n else float64(0.0)
    acc = w[rr, TAPS] * v * v
    p = v
    for k in range(TAPS):
        acc += w[rr, k] * p
        p *= v
    if r < m and c < n:
        out[r, c] = acc


def row_weights_guarded(out, x, w):
    """The reads under the bounds check: a thread-dependent condition, so the lanes may not all
    reach them and each keeps its own atomic."""
    c, r = cuda.grid(2)
    m, n = x.shape
    if r < m and c < n:
        v = x[r, c]
        acc = w[r, TAPS] * v * v
        p = v
        for k in range(TAPS):
            acc += w[r, k] * p
            p *= v
        out[r, c] = acc


WIDTH = 32        # columns of the shared column-weight tile: blockDim.x at most


def column_weights(out, x, w):
    """The transpose: each column of a block stages its column of weights and every thread of
    the column reads the same weights (`sw[k, tx]`, as the tiled matrix product reads
    `sb[j, tx]`): the lanes of a warp that hold several rows of a narrow block sum them."""
    sw = cuda.shared.array((COLS, WIDTH), float64)
    c, r = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    m, n = x.shape
    if ty < COLS:
        sw[ty, tx] = w[ty, c] if c < n else float64(0.0)
    cuda.syncthreads()
    v = x[r, c] if r < m and c < n else float64(0.0)
    acc = sw[TAPS, tx] * v * v
    p = v
    for k in range(TAPS):
        acc += sw[k, tx] * p
        p *= v
    if r < m and c < n:
        out[r, c] = acc
