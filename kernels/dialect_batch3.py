"""Dialect kernels for constructs met in the third batch of unseen public kernels: an array's dtype
read inside the kernel, names first bound inside a `while True:` loop and read after it, and index
tuples handed to device functions."""
import math

from numba import cuda


@cuda.jit
def dtype_casts(out, x):
    # dpbench's spelling: the kernel's float type taken from an argument, not hard-coded
    dtype = x.dtype
    i = cuda.grid(1)
    if i < out.shape[0]:
        scratch = cuda.local.array(shape=(3,), dtype=dtype)
        acc = dtype.type(0.0)
        for k in range(3):
            scratch[k] = x[i] * dtype.type(k + 1)
        for k in range(3):
            acc += scratch[k] * scratch[k]
        out[i] = x.dtype.type(0.5) * math.sqrt(acc)


@cuda.jit
def while_true_search(out, x, xp, fp):
    # Datashader's interp: a bisection in `while True` whose index is first bound in the body and
    # read after the loop, which only a break leaves
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        lo = 0
        hi = xp.shape[0] - 1
        while True:
            mid = 1 + (lo + hi) // 2
            if xp[mid] < v:
                lo = mid
            elif xp[mid - 1] > v:
                hi = mid - 1
            else:
                break
        slope = (fp[mid] - fp[mid - 1]) / (xp[mid] - xp[mid - 1])
        out[i] = fp[mid - 1] + slope * (v - xp[mid - 1])


@cuda.jit(device=True)
def _scaled_add(ary, idx, val):
    cuda.atomic.add(ary, idx, 2.0 * val)


@cuda.jit(device=True)
def _read_at(ary, idx):
    return ary[idx]


@cuda.jit
def tuple_index_arguments(out, x):
    # Datashader's clip: the element's index tuple passed to a device function that indexes with it
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        _scaled_add(out, (i, j), _read_at(x, (i, j)) * x[i, j])


@cuda.jit(device=True)
def _polar_point(angle, r, flip=0):
    # spiral_blr's spelling: a tuple returned, a trailing default the call may leave out
    if flip == 0:
        return (r * math.cos(angle), r * math.sin(angle))
    return (-r * math.cos(angle), -r * math.sin(angle))


@cuda.jit(device=True)
def _distance(p, q):
    return math.sqrt((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2)


@cuda.jit
def tuple_results(out, angle, r, flip):
    # a device function's tuple held in a name, read by position and passed whole to another
    i = cuda.grid(1)
    if i < out.shape[0]:
        p = _polar_point(angle[i], r[i])
        q = _polar_point(angle[i] + 0.5, r[i] * 0.5, flip)
        out[i] = p[0] * q[1] - p[-1] + _distance(p, q)


@cuda.jit
def tuple_result_in_loop(out, angle, r, n):
    # a tuple bound in a loop and read after it: its components are carried out of the loop
    i = cuda.grid(1)
    if i < out.shape[0]:
        for k in range(n):
            p = _polar_point(angle[i] * (k + 1), r[i])
        out[i] = p[0] * p[1]


@cuda.jit(device=True)
def _signed_pair(a, b, flip):
    if flip == 0:
        return (a * b, a + b)
    return (-a * b, -(a + b))


@cuda.jit
def literal_branch_argument(out, x, y):
    # a literal argument that the helper's returning branch tests: numba may prune the branch in
    # one generated copy of the body and not in another
    i = cuda.grid(1)
    if i < out.shape[0]:
        a, b = _signed_pair(x[i], y[i], 0)
        c, d = _signed_pair(x[i], y[i], 1)
        out[i] = a * d + b * c


@cuda.jit
def tuple_name_arguments(out, x):
    # an index tuple held in a name, then passed to device functions
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        at = (i, j)
        _scaled_add(out, at, _read_at(x, at) * x[at])


@cuda.jit
def tuple_result_rebound_in_loop(out, angle, r, n):
    # a tuple bound before a loop, rebound in it, read after it (the first value when it runs no iteration)
    i = cuda.grid(1)
    if i < out.shape[0]:
        p = _polar_point(angle[i], r[i])
        for k in range(n):
            p = _polar_point(angle[i] + p[1], r[i] * (k + 2))
        out[i] = p[0] - p[1]
