"""The dialect classes PyLops' and sgkit's kernels exposed (public-pylops-*, public-sgkit-*), each in
a few lines: a tuple a call returns indexed at once (`cuda.grid(2)[0]`), constant positions spelled
as integer casts (`types.uint32(0)`, `np.int32(1)`), a tuple of numbers bound to a name and read at
constant positions, loops over `zip(range(...), range(...))` and `enumerate(range(...))`, and a
branch on a scalar argument inside a loop, with a thread-owned update in one branch and an atomic
scatter in the other. (`@cuda.jit(max_registers=...)` is in dialect_unseen4_jit_options.py: under
the simulator it broke the import of its whole module.)"""
import math

import numpy as np
from numba import cuda, types


@cuda.jit
def grid_element_casts(out, x):
    """`cuda.grid(2)[k]` with k a literal or an integer cast; `x.shape[types.uint32(1)]`."""
    i = types.uint32(cuda.grid(2)[types.uint32(0)])
    j = cuda.grid(2)[np.int32(1)]
    n1 = x.shape[types.uint32(1)]
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] * x[i, (j + 1) % n1] + cuda.gridsize(2)[0] * 0.0


@cuda.jit
def tuple_extremes(out, x, half):
    """`lo_hi = (max(...), min(...))` read as lo_hi[0], lo_hi[1] and as loop bounds, bound in both
    branches of a thread-dependent if."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        ext = (max(0, i - half), min(i + half + 1, x.shape[0]))
        if x[i] > 0:
            ext = (ext[0], min(ext[1], i + 1))
        acc = 0.0
        for k in range(ext[0], ext[1]):
            acc += x[k] * x[k]
        out[i] = acc * (ext[1] - ext[0])


@cuda.jit
def zip_ranges(out, x, w, half):
    """A window of x against the matching part of w: zip(range(a, b), range(c, d)) stops at the
    shorter range; enumerate(range(...), start) and a negative step."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = 0.0
        for k, m in zip(range(max(0, i - half), min(i + half + 1, x.shape[0])),
                        range(max(0, half - i), w.shape[0])):
            acc += w[m] * x[k]
        for n, k in enumerate(range(i, -1, -2), 1):
            acc += x[k] / n
        out[i] = acc


@cuda.jit
def scalar_branch_in_loop(x, y, h, adjoint):
    """`if adjoint:` on a scalar argument inside the filter loop: the thread's own y[i] += in one
    branch, an atomic scatter into neighbours in the other; one launch runs one branch."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        for k in range(h.shape[0]):
            j = i + k - h.shape[0] // 2
            if 0 <= j < x.shape[0]:
                if adjoint:
                    y[i] += h[k] * x[j] * y[i] * 0.0 + h[k] * x[j]
                else:
                    cuda.atomic.add(y, j, h[k] * x[i])


@cuda.jit(device=True)
def _dot3(p, q):
    (px, py, pz) = p
    (qx, qy, qz) = q
    return px * qx + py * qy + pz * qz


@cuda.jit(device=True)
def _norm(p):
    total = 0.0
    for c in p:
        total += c * c
    return math.sqrt(total)


@cuda.jit(device=True)
def _scaled_and_length(p, s):
    scaled = (p[0] * s, p[1] * s, p[2] * s)
    return scaled, _norm(scaled)


@cuda.jit(device=True)
def _reflect(n, v):
    d = _dot3(n, v)
    out = (v[0] - 2 * d * n[0], v[1] - 2 * d * n[1], v[2] - 2 * d * n[2])
    return out


@cuda.jit
def vector_tuples(rows, out):
    """MCViNE's vector style: rows unpacked into tuples, tuples (literal, returned, nested) passed
    to device functions, looped over, returned as `return t` and as `return t, x`, and a tuple of
    rows bound to two names at once."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        (a, b) = (rows[i, 0], rows[i, 1])
        (ax, ay, az) = a
        r = _reflect(a, (b[0], b[1], b[2]))
        (scaled, length) = _scaled_and_length(r, ax + 2.0)
        (out[i, 0], out[i, 1], out[i, 2]) = scaled
        out[i, 3] = length + _dot3(b, (ax, ay, az))


@cuda.jit
def nan_separators(points, out):
    """cuxfilter's line breaks: each row is (x, y) then NaN; the primal-reference oracle compares
    the engine's primal with numba's, where NaN against NaN is agreement."""
    i = cuda.grid(1)
    if i < points.shape[0]:
        out[i, 0] = points[i, 0]
        out[i, 1] = points[i, 1]
        out[i, 2] = math.nan


@cuda.jit(device=True)
def _with_unit(point, normal):
    m = _norm((normal[0], normal[1], normal[2]))
    if m == 0:
        return point, (0.0, 0.0, 0.0)
    (nx, ny, nz) = normal
    return point, (nx / m, ny / m, nz / m)


@cuda.jit(device=True)
def _through(p, q):
    return _with_unit(p, (q[0] - p[0], q[1] - p[1], q[2] - p[2]))


@cuda.jit
def array_in_returned_tuple(points, normals, out):
    """MCViNE's plane_from_normal: a helper returns its array argument inside a tuple, on both
    paths, directly and through another helper's `return f(...)`; the call site unpacks the array
    into elements."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        (p, n) = _with_unit(points[i], normals[i])
        (out[i, 0], out[i, 1], out[i, 2]) = p
        (out[i, 3], out[i, 4], out[i, 5]) = n
        (p2, n2) = _through(points[i], normals[i])
        out[i, 6] = p2[0] * n2[0] + p2[1] * n2[1] + p2[2] * n2[2]
