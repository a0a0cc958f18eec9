"""In-place updates of an element whose shadow takes plain updates (a thread's own global element,
or a shared element one thread touches between barriers): the reverse sweep folds the store's
zeroing of the shadow element into the later add of the read's adjoint at the same index
(harness/engine/emission/emit_deferred_zeros.py), unless another access in between may touch the
same element. cases/inplace-shadows.yaml checks their gradients."""
from numba import cuda, float64


def tree_scaled_levels(out, x):
    """A tree whose levels scale the kept half: sh[t] = 0.5 sh[t] + sh[t + s] sh[t + s]; the
    read of sh[t + s] (s > 0) touches another element than sh[t]."""
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = x[i]
    sh[t] = v
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            sh[t] = 0.5 * sh[t] + sh[t + s] * sh[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out[cuda.blockIdx.x] = sh[0]


def own_element_squared_plus(x, y):
    """x[i] = x[i] * x[i] + y[i]: two reads of the element the store replaces."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] * x[i] + y[i]


def own_element_two_spellings(x, y):
    """The thread's element read as x[i] and again as x[j], j computed apart (the same value):
    the store's zeroing of dx[i] must stay before dx[j]'s add, which no proof separates from it."""
    i = cuda.grid(1)
    j = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i < x.shape[0]:
        a = x[i]
        b = x[j]
        x[i] = a * b + 2.0 * a + y[i]


def shared_two_spellings(out, x):
    """The shared version: sh[t] and sh[u], u = t computed apart, in one in-place update between
    barriers (each element one thread's)."""
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    u = cuda.threadIdx.x * 1
    i = cuda.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = x[i]
    sh[t] = v
    cuda.syncthreads()
    a = sh[t]
    b = sh[u]
    sh[t] = a * b + 3.0 * a
    cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = sh[t] * sh[t]
