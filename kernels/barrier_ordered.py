"""Global arrays that threads of one block write and read across a barrier: a wavefront recursion, an
in-place scan and a Jacobi ping-pong, each row of the arrays owned by one block; and siblings that
the barriers do not order (another block's element, one element written twice between two barriers,
the barrier left out)."""
import math

from numba import cuda


def wavefront_row(A, w, n):
    """A[b, t + 1] = sin(A[b, t]) * w[b, t] + A[b, t] on step p = t: thread t reads the element
    thread t - 1 wrote one step earlier, a barrier after each step."""
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if t == p:
            A[b, t + 1] = math.sin(A[b, t]) * w[b, t] + A[b, t]
        cuda.syncthreads()


def scan_in_place(A, n):
    """Hillis-Steele inclusive scan of sin-weighted neighbours in global memory, in place: read both
    elements, barrier, write, barrier; the stride doubles while it is below n."""
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    off = 1
    while off < n:
        acc = A[b, t]
        if t >= off:
            acc += math.sin(A[b, t - off])
        cuda.syncthreads()
        A[b, t] = acc
        cuda.syncthreads()
        off *= 2


def jacobi_ping_pong(U, V, n_iter):
    """Jacobi sweeps along each block's row: V from U's neighbours, barrier, U from V, barrier."""
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    n = U.shape[1]
    for it in range(n_iter):
        if t >= 1 and t < n - 1:
            V[b, t] = 0.25 * U[b, t - 1] + 0.5 * U[b, t] + 0.25 * U[b, t + 1] + 0.1 * math.sin(U[b, t])
        cuda.syncthreads()
        if t >= 1 and t < n - 1:
            U[b, t] = V[b, t]
        cuda.syncthreads()


def wavefront_across_blocks(A, w, n):
    """The wavefront over the whole grid: thread i reads what thread i - 1 wrote, which belongs to
    another block at a block's first thread, and no barrier orders blocks."""
    i = cuda.grid(1)
    for p in range(n):
        if i == p:
            A[i + 1] = math.sin(A[i]) * w[i] + A[i]
        cuda.syncthreads()


def written_twice(A, w, n):
    """Every thread t <= p writes A[b, p + 1] between the same two barriers."""
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if t <= p:
            A[b, p + 1] = math.sin(A[b, p]) * w[b, t]
        cuda.syncthreads()


def wavefront_no_barrier(A, w, n):
    """wavefront_row without its barrier: thread t may read A[b, t] before thread t - 1 wrote it."""
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if t == p:
            A[b, t + 1] = math.sin(A[b, t]) * w[b, t] + A[b, t]


def wavefront_tile(A, w, n):
    """A 2-D wavefront over one block's tile: thread (x, y) computes A[b, y + 1, x + 1] from its upper
    and left neighbours on diagonal p = x + y, a barrier after each diagonal."""
    b = cuda.blockIdx.x
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    for p in range(n):
        if x + y == p:
            A[b, y + 1, x + 1] = math.sin(A[b, y, x + 1]) * w[b, y, x] + 0.5 * A[b, y + 1, x]
        cuda.syncthreads()
