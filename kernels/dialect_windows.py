"""Kernels that take windows of arrays and loop over arrays, as published numba.cuda code does: a
3 x 3 window passed to a device function (raster filters), windows clipped by Python's slice rules
at an array's ends, a column, a stepped window written through, a window of a window, and `for`
loops over elements, rows, enumerate(...) and zip(...). The engine lowers each window as a view of
its array (harness/engine/frontend/views.py) and each such loop as a counted one."""
from numba import cuda, float32


@cuda.jit(device=True)
def _corner_blend(w, c):
    """Reads a 3 x 3 window: literal indices, negative ones (which count from the end of the window,
    not of the array), and its shape."""
    rows, cols = w.shape
    return c[0] * w[0, 0] + w[2, 2] - w[-1, 0] * w[1, -1] + (rows - cols) + len(w) * w[-2, -3]


@cuda.jit
def window_stencil(out, x, c):
    i, j = cuda.grid(2)
    if 1 <= i < x.shape[0] - 1 and 1 <= j < x.shape[1] - 1:
        out[i, j] = _corner_blend(x[i - 1:i + 2, j - 1:j + 2], c)


@cuda.jit
def clipped_windows(out, x):
    """The mean over x[i - 2:i + 3]: near the end the window is shorter, and at i < 2, where i - 2
    counts from the end, it is empty (Python's slice rules, which numba keeps)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        w = x[i - 2:i + 3]
        s = 0.0
        for v in w:
            s += v * v
        out[i] = s / max(len(w), 1) + w.size


@cuda.jit(device=True)
def _tail_sum(w):
    """A window of a window: the parameter sliced again."""
    t = w[1:]
    s = 0.0
    for k in range(t.shape[0]):
        s += t[k]
    return s


@cuda.jit
def columns_and_steps(out, x, a):
    """A column x[:, j] summed, every other element of out's row written through the stepped window
    out[j, 1::2], a window of a window, and a window of x's row bound to a name."""
    j = cuda.grid(1)
    if j < x.shape[1]:
        col = x[:, j]
        s = 0.0
        for k in range(col.shape[0]):
            s += col[k] * a
        odd = out[j, 1::2]
        for k in range(odd.shape[0]):
            odd[k] = s * (k + 1)
        out[j, 0] = _tail_sum(x[1:4, j]) * s
        part = x[j, :][2:]
        out[j, 2] = part[0] * part[-1]


@cuda.jit
def array_loops(out, x, y, w):
    """Loops over arrays: the elements of a 1-d array (with break and else), the rows of a 2-d
    array, enumerate with a start, zip of arrays of different lengths (the shortest ends it, and a
    nested zip unpacks into a nested target), and a loop over a row whose index the body changes
    (numba evaluates the iterable once)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for v in w:
            if v > 10.0:
                break
            s += v * x[i, 0]
        else:
            s += 1.0
        for v in y:
            if v > 1.0:
                break
            s += v
        for row in x:
            s += row[0] * row[1]
        for k, v in enumerate(y, 1):
            s += k * v
        for p, (q, r) in zip(w, zip(y, x[i])):
            s += p * q * r
        r = i
        for v in x[r]:
            r = 0
            s += v * x[r, 1]
        out[i] = s


@cuda.jit
def chained_subscripts(out, x):
    """Rows indexed again, as C programmers write a 2-d access: x[i][j], stores through out[i][j],
    and a window of a row, x[i][1:][j - 1]."""
    i, j = cuda.grid(2)
    if i < x.shape[0] and 1 <= j < x.shape[1]:
        out[i][j] = x[i][j] * x[i][1:][j - 1]


@cuda.jit(device=True)
def _three_point(w):
    return 0.25 * w[0] + 0.5 * w[1] + 0.25 * w[-1]


@cuda.jit
def shared_windows(out, x):
    """Windows of a shared array: each thread's neighbours sm[t:t + 3] passed to a device function,
    the tile's zero halo written by one thread."""
    sm = cuda.shared.array(34, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    sm[t + 1] = x[i]
    if t == 0:
        sm[0] = 0.0
        sm[33] = 0.0
    cuda.syncthreads()
    out[i] = _three_point(sm[t:t + 3])


@cuda.jit
def slice_stores(out, x, a):
    """Stores into views, element by element as numba does: a row of a 2-d array filled with a
    number, a stepped window filled, and a row of a local array. (A window copied from another
    array, `out[i, 1:4] = x[i, 0:3]`, fails numba.cuda's own lowering on the PTX tier and the H200,
    so it is not here; the engine lowers it element by element, tests/engine/test_dialect.py.)"""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, :] = a
        out[i, 1:6:2] = x[i, 0] * a
        out[i, 4] = out[i, 4] + x[i, 4] * a
        tmp = cuda.local.array((2, 3), float32)
        tmp[1] = x[i, 1]
        tmp[0, :] = x[i, 2]
        out[i, 5] = tmp[0, 0] * tmp[1, 0] + tmp[0, 1] + tmp[0, 2] + tmp[1, 2]


@cuda.jit
def augmented_view_stores(out, x, a):
    """In-place arithmetic on a view: numba.cuda cannot compile it (the simulator, which runs
    numpy, can), so the engine refuses it and says so."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, ::2] += x[i, 4] * a
