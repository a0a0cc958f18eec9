"""Kernels written in the everyday numba.cuda dialect, as published code spells it: keyword shared
arrays sized by module constants, len() and shape unpacking, tuple unpacking into array elements,
asserts and annotations, numba's own spellings of types and intrinsics, ping-pong buffers.
The engine's normal form (harness/engine/frontend/desugar.py) and lowering accept each as written."""
import math

import numba
import numpy as np
from numba import cuda, float32, types

TPB = 32


@cuda.jit
def shared_keywords(out, x):
    """A block-local copy through keyword shared arrays (shapes from a module constant and a
    constant expression, dtypes spelled four ways), then a neighbour read. (numba.cuda folds
    `32 + 2` but not `TPB + HALO`; the engine folds both, tests/engine/test_dialect.py.)"""
    tile = cuda.shared.array(shape=TPB, dtype=numba.float32)
    pad = cuda.shared.array(shape=(32 + 2,), dtype=types.float32)
    scratch = cuda.local.array(shape=2, dtype=np.float32)
    spare = cuda.local.array(2, 'float32')
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    tile[t] = x[i]
    pad[t] = 0.0
    cuda.syncthreads()
    scratch[0] = tile[t]
    scratch[1] = tile[(t + 1) % TPB]
    spare[0] = scratch[0] * scratch[1]
    out[i] = spare[0] + float32(2.0) * scratch[0] + pad[t]


@cuda.jit
def lengths(out, x, w):
    """len(), .size, .ndim and a shape unpacked into names."""
    i = cuda.grid(1)
    n = len(x)
    (m,) = w.shape
    if i < n:
        acc: x.dtype = 0
        for k in range(m):
            acc += w[k] * x[(i + k) % x.size]
        out[i] = acc * x.ndim


@cuda.jit(device=True)
def _polar(r, a):
    return r * math.cos(a), r * math.sin(a)


@cuda.jit
def unpack_targets(out, r, a):
    """A device function's tuple unpacked straight into array elements, a nested tuple, a swap."""
    i = cuda.grid(1)
    assert i >= 0, "grid indices are never negative"
    if i < r.size:
        out[i, 0], out[i, 1] = _polar(r[i], a[i])
        (p, q), s = (out[i, 0], out[i, 1]), r[i]
        p, q = q, p
        out[i, 2] = p * s + numba.float32(0.5) * q


@cuda.jit
def spellings(out, x):
    """numba's own spellings of casts and intrinsics (numba.cuda.grid and cuda.syncwarp are in
    tests/engine/test_dialect.py: the simulator, which runs the primal reference here, lacks both)."""
    i = cuda.grid(1)
    lane = cuda.laneid
    cuda.threadfence_block()
    cuda.threadfence()
    cuda.threadfence_system()
    if i < x.size:
        k = numba.int32(lane % cuda.warpsize)
        out[i] = x[i] * float32(1.0 + k * 0.0) + np.float32(0.25) * x[i] * x[i]


@cuda.jit
def ping_pong(out, buf_0, buf_1, step):
    """A name bound to one of two array arguments by a run-time choice."""
    i = cuda.grid(1)
    data = buf_0 if step % 2 == 0 else buf_1
    if i < out.size:
        out[i] = data[i] * data[i]


@cuda.jit
def shared_in_if(out, x):
    """A shared array declared inside an `if` (numba allocates it for the whole block anyway)."""
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    if TPB > 1:
        sm = cuda.shared.array(TPB, float32)
        sm[t] = x[i]
    cuda.syncthreads()
    out[i] = sm[(t + 1) % TPB] * x[i]


@cuda.jit
def shared_in_runtime_if(out, x):
    """The same under a condition numba cannot decide before the launch (uniform across the block)."""
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    if x.shape[0] > 1:
        sm = cuda.shared.array(TPB, float32)
        sm[t] = x[i]
    cuda.syncthreads()
    out[i] = sm[(t + 1) % TPB] * x[i]


@cuda.jit
def cube_roots(out, x):
    """math.cbrt, which numba.cuda cannot compile itself: the engine calls libdevice's."""
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.cbrt(x[i]) * x[i]


COEFFS = np.array([0.5, -1.25, 2.0, 0.75], dtype=np.float64)


@cuda.jit
def const_coefficients(out, x):
    """A polynomial whose coefficients sit in constant memory."""
    c = cuda.const.array_like(COEFFS)
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(len(c)):
            acc = acc * x[i] + c[k]
        out[i] = acc


@cuda.jit(device=True)
def _row_sum(row, n):
    s = 0.0
    for k in range(n):
        s += row[k]
    return s


@cuda.jit
def shared_rows(out, x):
    """Rows of a shared and of a local array (`sm[1, :]`, `loc[0]`) passed to a device function."""
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    sm = cuda.shared.array((2, TPB), float32)
    loc = cuda.local.array((2, 3), float32)
    sm[0, t] = x[i]
    sm[1, t] = 2 * x[i] * x[i]
    for k in range(3):
        loc[0, k] = x[i] * k
        loc[1, k] = 1.0
    cuda.syncthreads()
    out[i] = _row_sum(sm[1, :], 4) + _row_sum(loc[0], len(loc[0])) + sm[0, (t + 1) % TPB]


def _square(v):
    return v * v


square_inline = cuda.jit(_square, device=True, inline=True)


@numba.njit
def _cube(v):
    return v * v * v


@cuda.jit
def helper_spellings(out, x):
    """Device functions made by cuda.jit(f, device=True, inline=True) and by numba.njit."""
    i = cuda.grid(1)
    if i < x.size:
        out[i] = square_inline(x[i]) + _cube(x[i])


SM_SIZE = (2, TPB)
WEIGHTS = np.array([0.5, 2.0, -1.0], dtype=np.float64)
combine = cuda.jit(device=True)(lambda a, b: a + b)   # noqa: E731  (as numba's cuda.reduce builds it)


@cuda.jit
def module_constants(out, x):
    """A tuple shape from a module constant, a module numpy array indexed in the kernel, a lambda
    device function, a row of a shared array bound to a local name."""
    sm = cuda.shared.array(SM_SIZE, dtype=numba.float64)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    row = sm[1, :]
    row[t] = x[i] * WEIGHTS[i % 3]
    sm[0, t] = x[i]
    cuda.syncthreads()
    out[i] = combine(row[(t + 1) % TPB], sm[0, t] * WEIGHTS[2])


@cuda.jit
def inner_functions(out, x, n):
    """Helper functions defined inside the kernel body, one closing over a scalar and one over an
    array of the kernel (bicubic interpolation as published kernels write it)."""
    a = -0.5

    def cubic_weight(t):
        t = abs(t)
        if t <= 1.0:
            return (a + 2.0) * t ** 3 - (a + 3.0) * t ** 2 + 1.0
        elif t < 2.0:
            return a * t ** 3 - 5.0 * a * t ** 2 + 8.0 * a * t - 4.0 * a
        return 0.0

    def sample(k):
        return x[min(max(k, 0), n - 1)]

    i = cuda.grid(1)
    if i < out.size:
        pos = i * 0.37
        base = int(pos)
        frac = pos - base
        acc = 0.0
        for m in range(-1, 3):
            acc += cubic_weight(frac - m) * sample(base + m)
        out[i] = acc


@cuda.jit
def shape_values(out, x, w):
    """An array's shape held in a name, then indexed, measured and unpacked."""
    s = x.shape
    ws = w.shape
    rows, cols = s
    r, c = cuda.grid(2)
    if r < s[0] and c < cols and len(s) == 2:
        acc = 0.0
        for k in range(ws[0]):
            acc += w[k] * x[r, (c + k) % cols]
        out[r, c] = acc * rows


@cuda.jit
def trailing_barrier_fill(table, w):
    """A running fill, one row per thread, ending with a barrier under the bounds check (as a
    published DTW kernel does): the barrier orders no memory access, so it is left out of the
    derivative kernels rather than refused."""
    n, cols = table.shape
    x = cuda.grid(1)
    if x < n:
        for j in range(1, cols):
            table[x, j] += min(w * table[x, j - 1], table[x, j] * table[x, j])
        cuda.syncthreads()


@cuda.jit
def for_else(out, x, n):
    """`for ... else`: the else block runs when the loop ends without `break`. The first loop has
    no break (its else always runs); the second breaks at a data-independent count, so whether its
    else runs depends on n only."""
    i = cuda.grid(1)
    if i < out.size:
        acc = 0.0
        for k in range(n):
            acc += 0.5 * x[(i + k) % x.size]
        else:
            acc *= 2.0
        for k in range(n):
            if k == 3:
                break
            acc += x[i] * x[(i + 1) % x.size]
        else:
            acc = acc * x[i]
        out[i] = acc


@cuda.jit
def while_else(out, x, n):
    """`while ... else` without a break: the else block runs once the condition fails."""
    i = cuda.grid(1)
    if i < out.size:
        acc = x[i]
        k = 0
        while k < n:
            acc = acc * 0.5 + x[(i + k) % x.size]
            k += 1
        else:
            acc = acc * x[i]
        out[i] = acc


@cuda.jit
def nested_inner_functions(out, x, w, n):
    """Inner functions calling one another, a default parameter, one defined in a loop body and
    called there, and a scalar the kernel rebinds between calls (each call reads its value then)."""
    scale = 2.0

    def weight(k):
        return w[k % w.size] * scale

    def term(t, k, power=2):
        return weight(k) * t ** power

    i = cuda.grid(1)
    if i < out.size:
        acc = term(x[i], 0)
        scale = 0.5
        for k in range(n):
            def shifted(t):
                return t + k * 0.25
            acc += term(shifted(x[(i + k) % x.size]), k, 3)
        out[i] = acc


@cuda.jit
def ping_pong_store(out, buf_0, buf_1, step):
    """Ping-pong buffers read through one name and written through the other."""
    i = cuda.grid(1)
    src = buf_0 if step % 2 == 0 else buf_1
    dst = buf_1 if step % 2 == 0 else buf_0
    if i < out.size:
        dst[i] = 0.5 * src[i] * src[i] + src.size
        out[i] = 2.0 * src[i]
