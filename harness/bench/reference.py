"""Hand-written tangent and adjoint kernels with the generated kernels' exact semantics and argument
order (the order Engine.bind flattens: each argument, then its shadow; reverse kernels end with the
Active buffer and the tape-overflow flag). tests/suite/test_bench.py checks each against the engine's own
kernel on the simulator, so a benchmark ratio compares like with like.

Kernels are plain functions (`harness bench` compiles them with cuda.jit); helpers are device functions.
"""
from __future__ import annotations

import math

from numba import cuda, float32, float64

TWO_OVER_SQRTPI = 1.1283791670955126


SPREAD = 64


@cuda.jit(device=True)
def block_add(target, index, v, spread):
    """One atomic per block: warp butterfly, warps' sums in shared memory, thread 0 adds the block's
    sum to target[index], or with `spread` to one of SPREAD copies of slot `index` (chosen by block
    id). One function for both: a device function declaring a shared array cannot be called from
    another device function here (NVVM rejects the IR: ERROR_INVALID_IR, numba-cuda 0.30)."""
    red = cuda.shared.array(32, float64)
    m = cuda.activemask()
    t = cuda.threadIdx.x
    for off in (16, 8, 4, 2, 1):
        o = cuda.shfl_xor_sync(m, v, off)
        if (m >> (cuda.laneid ^ off)) & 1:
            v += o
    cuda.syncthreads()
    if cuda.laneid == 0:
        red[t // 32] = v
    cuda.syncthreads()
    if t == 0:
        s = 0.0
        for w in range((cuda.blockDim.x + 31) // 32):
            s += red[w]
        cuda.atomic.add(target, index * SPREAD + cuda.blockIdx.x % SPREAD if spread else index, s)


@cuda.jit(device=True)
def spread_finish(spread, nslots, target):
    """One thread: add each slot's copies to target[slot] and leave the scratch zeroed."""
    for k in range(nslots):
        s = 0.0
        for c in range(k * SPREAD, (k + 1) * SPREAD):
            s += spread[c]
            spread[c] = 0.0
        target[k] += s


def horner_dup_finish(out, dout, x, dx, c, dc, spread):
    spread_finish(spread, 4, dc)


def conv3_dup_finish(out, dout, x, dx, w, dw, d, spread):
    spread_finish(spread, 3, dw)


# ---------------------------------------------------------------- axpy: out = a x + y
def axpy_forward(out, dout, a, x, dx, y, dy):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]
        dout[i] = a * dx[i] + dy[i]


def axpy_reverse(out, dout, a, x, dx, y, dy):
    i = cuda.grid(1)
    if i < out.shape[0]:
        xv, yv, g, gx, gy = x[i], y[i], dout[i], dx[i], dy[i]     # every load before any store
        out[i] = a * xv + yv
        dout[i] = 0
        dx[i] = gx + a * g
        dy[i] = gy + g


# ---------------------------------------------------------------- math_heavy: 14 terms, partials by hand
@cuda.jit(device=True)
def _math_heavy_partials(u, v):
    e = math.exp(0.5 * v)
    th = math.tanh(u * v)
    r = math.sqrt(2.0 + math.cos(v))
    p = 1.5 + v * v
    w = 2.0 + v
    den = u * u + w * w
    h = math.hypot(u, v)
    mn, mx = min(u, v), max(u, 0.25)
    sgn = 1.0 if u - v > 0 else (-1.0 if u - v < 0 else 0.0)
    s = (math.sin(u) * e + math.log(1.0 + u * u) - r + th + math.erf(u) + p ** 1.5 + math.atan2(u, w)
         + h + abs(u - v) + mn * mx + math.pow(2.0 + u, 0.5))
    su = (math.cos(u) * e + 2.0 * u / (1.0 + u * u) + v * (1.0 - th * th) + TWO_OVER_SQRTPI * math.exp(-u * u)
          + w / den + u / h + sgn + (1.0 if u <= v else 0.0) * mx + mn * (1.0 if u >= 0.25 else 0.0)
          + 0.5 / math.sqrt(2.0 + u))
    sv = (0.5 * math.sin(u) * e + math.sin(v) / (2.0 * r) + u * (1.0 - th * th) + 3.0 * v * math.sqrt(p)
          - u / den + v / h - sgn + (0.0 if u <= v else 1.0) * mx)
    q = 1.0 + math.fabs(v)
    sq = 1.0 if v > 0 else (-1.0 if v < 0 else 0.0)
    return s / q, su / q, sv / q - s / (q * q) * sq


def math_heavy_forward(out, dout, x, dx, y, dy):
    i = cuda.grid(1)
    if i < x.shape[0]:
        o, ou, ov = _math_heavy_partials(x[i], y[i])
        out[i] = o
        dout[i] = ou * dx[i] + ov * dy[i]


def math_heavy_reverse(out, dout, x, dx, y, dy):
    i = cuda.grid(1)
    if i < x.shape[0]:
        u, v, g, gx, gy = x[i], y[i], dout[i], dx[i], dy[i]
        o, ou, ov = _math_heavy_partials(u, v)
        out[i] = o
        dout[i] = 0
        dx[i] = gx + g * ou
        dy[i] = gy + g * ov


# ---------------------------------------------------------------- Horner, coefficients Const or Duplicated
def horner_forward(out, dout, x, dx, c):
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        out[i] = c[0] + t * (c[1] + t * (c[2] + t * c[3]))
        dout[i] = (c[1] + t * (2.0 * c[2] + 3.0 * t * c[3])) * dx[i]


def horner_reverse(out, dout, x, dx, c):
    i = cuda.grid(1)
    if i < x.shape[0]:
        t, g, gx = x[i], dout[i], dx[i]
        out[i] = c[0] + t * (c[1] + t * (c[2] + t * c[3]))
        dout[i] = 0
        dx[i] = gx + g * (c[1] + t * (2.0 * c[2] + 3.0 * t * c[3]))


def horner_dup_forward(out, dout, x, dx, c, dc):
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        out[i] = c[0] + t * (c[1] + t * (c[2] + t * c[3]))
        dout[i] = ((c[1] + t * (2.0 * c[2] + 3.0 * t * c[3])) * dx[i]
                   + dc[0] + t * (dc[1] + t * (dc[2] + t * dc[3])))


def horner_dup_reverse(out, dout, x, dx, c, dc, spread):
    i = cuda.grid(1)
    g = 0.0
    t = 0.0
    if i < x.shape[0]:
        t, g, gx = x[i], dout[i], dx[i]
        out[i] = c[0] + t * (c[1] + t * (c[2] + t * c[3]))
        dout[i] = 0
        dx[i] = gx + g * (c[1] + t * (2.0 * c[2] + 3.0 * t * c[3]))
    block_add(spread, 0, g, True)
    block_add(spread, 1, g * t, True)
    block_add(spread, 2, g * t * t, True)
    block_add(spread, 3, g * t * t * t, True)



# Coarsened as the engine coarsens a reverse that ends in a reduction (harness/engine/emission/coarsen.py):
# launched on the bound launch's capped grid, each block runs the real grid's blocks blockIdx.x,
# blockIdx.x + gridDim.x, ... (ceil(n / blockDim.x) of them), summing in registers, and reduces once.
def horner_dup_reverse_coarse(out, dout, x, dx, c, dc, spread):
    n = x.shape[0]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for vb in range(cuda.blockIdx.x, (n + cuda.blockDim.x - 1) // cuda.blockDim.x, cuda.gridDim.x):
        i = vb * cuda.blockDim.x + cuda.threadIdx.x
        if i < n:
            t, g, gx = x[i], dout[i], dx[i]
            out[i] = c[0] + t * (c[1] + t * (c[2] + t * c[3]))
            dout[i] = 0
            dx[i] = gx + g * (c[1] + t * (2.0 * c[2] + 3.0 * t * c[3]))
            s0 += g
            s1 += g * t
            s2 += g * t * t
            s3 += g * t * t * t
    block_add(spread, 0, s0, True)
    block_add(spread, 1, s1, True)
    block_add(spread, 2, s2, True)
    block_add(spread, 3, s3, True)

# ---------------------------------------------------------------- Horner with a runtime degree
# Three reverse kernels with the generated kernel's semantics (dx += dout * p'(t), dout consumed):
# `direct` carries p'(t) forward beside p(t) in one pass, which is the engine's default form (the
# loop's 1 x 1 Jacobian in forward mode, emit_loop_jacobian.py) and the best a person would write
# for one input per thread; `recompute` is the engine's form with loop_jacobian_limit 0 written by
# hand (the first RECOMPUTE iterations' acc rebuilt by replay, later ones taped; with the default
# limit, RECOMPUTE = TAPE, no tape is ever written or read; the overflow flag set past TAPE
# entries); `tape` keeps every iteration's acc in local memory (the form before both).
TAPE = 64
RECOMPUTE = 64     # the engine's default recompute_limit (= its default tape_size)


def horner_dynamic_forward(out, dout, x, dx, c, n):
    i = cuda.grid(1)
    if i < x.shape[0]:
        t, dt = x[i], dx[i]
        acc, dacc = 0.0, 0.0
        for k in range(n):
            dacc = dacc * t + acc * dt
            acc = acc * t + c[k]
        out[i] = acc
        dout[i] = dacc


def horner_dynamic_reverse_recompute(out, dout, x, dx, c, n, overflow):
    i = cuda.grid(1)
    if i < x.shape[0]:
        tape = cuda.local.array(TAPE, float64)
        t, g, gx = x[i], dout[i], dx[i]
        acc = 0.0
        for k in range(n):
            if k >= TAPE:
                overflow[0] = 1
            elif k >= RECOMPUTE:
                tape[k] = acc
            acc = acc * t + c[k]
        out[i] = acc
        dout[i] = 0
        gt = 0.0
        for k in range(min(n, TAPE) - 1, -1, -1):
            if k < RECOMPUTE:
                a = 0.0
                for j in range(k):
                    a = a * t + c[j]
            else:
                a = tape[k]
            gt += g * a
            g = g * t
        dx[i] = gx + gt


def horner_dynamic_reverse_direct(out, dout, x, dx, c, n, overflow):
    """The engine's Jacobian form (emit_loop_jacobian.py): d acc / d t carried forward, then one
    product; no tape, so no iteration limit and no overflow flag."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t, g, gx = x[i], dout[i], dx[i]
        acc, dacc = 0.0, 0.0
        for k in range(n):
            dacc = dacc * t + acc
            acc = acc * t + c[k]
        out[i] = acc
        dout[i] = 0
        dx[i] = gx + g * dacc


def horner_dynamic_reverse_tape(out, dout, x, dx, c, n, overflow):
    i = cuda.grid(1)
    if i < x.shape[0]:
        tape = cuda.local.array(TAPE, float64)
        t, g, gx = x[i], dout[i], dx[i]
        acc = 0.0
        for k in range(n):
            if k < TAPE:
                tape[k] = acc
            acc = acc * t + c[k]
        if n > TAPE:
            overflow[0] = 1
        out[i] = acc
        dout[i] = 0
        gt = 0.0
        for k in range(min(n, TAPE) - 1, -1, -1):
            gt += g * tape[k]
            g = g * t
        dx[i] = gx + gt


# ---------------------------------------------------------------- conv3: out[l] = w0 x[l-d] + w1 x[l] + w2 x[l+d]
def conv3_reverse(out, dout, x, dx, w, d):
    """Scatter with atomics (the generated kernel's semantics: the cotangent is consumed)."""
    l = cuda.grid(1)
    n = x.shape[0]
    if l >= d and l < n - d:
        out[l] = w[0] * x[l - d] + w[1] * x[l] + w[2] * x[l + d]
        g = dout[l]
        dout[l] = 0
        cuda.atomic.add(dx, l - d, w[0] * g)
        cuda.atomic.add(dx, l, w[1] * g)
        cuda.atomic.add(dx, l + d, w[2] * g)


def conv3_gather(out, dout, x, dx, w, d):
    """The transposed stencil as a gather (each thread writes only its own dx; dout is left as
    is, so this is a lower bound, not the same semantics)."""
    l = cuda.grid(1)
    n = x.shape[0]
    if l >= d and l < n - d:
        out[l] = w[0] * x[l - d] + w[1] * x[l] + w[2] * x[l + d]
    if l < n:
        s = dx[l]
        if l + d >= d and l + d < n - d:
            s += w[0] * dout[l + d]
        if l >= d and l < n - d:
            s += w[1] * dout[l]
        if l - d >= d and l - d < n - d:
            s += w[2] * dout[l - d]
        dx[l] = s


def conv3_gather_consume(out, dout, x, dx, w, d):
    """The transposed stencil as a gather with the generated kernel's semantics: dout is read by
    three threads, so it is consumed (zeroed) by a second kernel, conv3_consume, on the same grid."""
    l = cuda.grid(1)
    n = x.shape[0]
    s = 0.0
    if l < n:
        s = dx[l]
        if l + d >= d and l + d < n - d:
            s += w[0] * dout[l + d]
        if l >= d and l < n - d:
            s += w[1] * dout[l]
        if l - d >= d and l - d < n - d:
            s += w[2] * dout[l - d]
    if l >= d and l < n - d:
        out[l] = w[0] * x[l - d] + w[1] * x[l] + w[2] * x[l + d]
    if l < n:
        dx[l] = s


def conv3_consume(out, dout, x, dx, w, d):
    l = cuda.grid(1)
    if l >= d and l < x.shape[0] - d:
        dout[l] = 0


def conv3_dup_reverse(out, dout, x, dx, w, dw, d, spread):
    l = cuda.grid(1)
    n = x.shape[0]
    g0 = 0.0
    g1 = 0.0
    g2 = 0.0
    if l >= d and l < n - d:
        a, b, c = x[l - d], x[l], x[l + d]
        out[l] = w[0] * a + w[1] * b + w[2] * c
        g = dout[l]
        dout[l] = 0
        cuda.atomic.add(dx, l - d, w[0] * g)
        cuda.atomic.add(dx, l, w[1] * g)
        cuda.atomic.add(dx, l + d, w[2] * g)
        g0, g1, g2 = g * a, g * b, g * c
    block_add(spread, 0, g0, True)
    block_add(spread, 1, g1, True)
    block_add(spread, 2, g2, True)



def conv3_dup_reverse_coarse(out, dout, x, dx, w, dw, d, spread):
    """conv3_dup_reverse coarsened (see horner_dup_reverse_coarse)."""
    n = x.shape[0]
    g0 = 0.0
    g1 = 0.0
    g2 = 0.0
    for vb in range(cuda.blockIdx.x, (n + cuda.blockDim.x - 1) // cuda.blockDim.x, cuda.gridDim.x):
        l = vb * cuda.blockDim.x + cuda.threadIdx.x
        if l >= d and l < n - d:
            a, b, c = x[l - d], x[l], x[l + d]
            out[l] = w[0] * a + w[1] * b + w[2] * c
            g = dout[l]
            dout[l] = 0
            cuda.atomic.add(dx, l - d, w[0] * g)
            cuda.atomic.add(dx, l, w[1] * g)
            cuda.atomic.add(dx, l + d, w[2] * g)
            g0 += g * a
            g1 += g * b
            g2 += g * c
    block_add(spread, 0, g0, True)
    block_add(spread, 1, g1, True)
    block_add(spread, 2, g2, True)

# ---------------------------------------------------------------- Active scalar: out = alpha x
def scale_reverse(out, dout, alpha, x, dx, active_out):
    i = cuda.grid(1)
    g = 0.0
    if i < x.shape[0]:
        xv, g0, gx = x[i], dout[i], dx[i]
        out[i] = alpha * xv
        dout[i] = 0
        dx[i] = gx + alpha * g0
        g = g0 * xv
    block_add(active_out, 0, g, False)



def scale_reverse_coarse(out, dout, alpha, x, dx, active_out):
    """scale_reverse coarsened (see horner_dup_reverse_coarse)."""
    n = x.shape[0]
    g = 0.0
    for vb in range(cuda.blockIdx.x, (n + cuda.blockDim.x - 1) // cuda.blockDim.x, cuda.gridDim.x):
        i = vb * cuda.blockDim.x + cuda.threadIdx.x
        if i < n:
            xv, g0, gx = x[i], dout[i], dx[i]
            out[i] = alpha * xv
            dout[i] = 0
            dx[i] = gx + alpha * g0
            g += g0 * xv
    block_add(active_out, 0, g, False)

def scale_reverse_atomic_per_thread(out, dout, alpha, x, dx, active_out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        xv, g, gx = x[i], dout[i], dx[i]
        out[i] = alpha * xv
        dout[i] = 0
        dx[i] = gx + alpha * g
        cuda.atomic.add(active_out, 0, float64(g * xv))


# ---------------------------------------------------------------- block reduction in shared memory
def block_sum_reverse(out, dout, x, dx):
    """out[0] += sum x^2 (tree in shared memory, one atomic per block): dx[i] += 2 x[i] dout[0]."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        dx[i] += 2.0 * x[i] * dout[0]
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    v = 0.0
    if i < x.shape[0]:
        v = x[i] * x[i]
    sh[t] = v
    cuda.syncthreads()
    for s in (32, 16, 8, 4, 2, 1):
        if t < s:
            sh[t] += sh[t + s]
        cuda.syncthreads()
    if t == 0:
        cuda.atomic.add(out, 0, sh[0])


# ---------------------------------------------------------------- tiled matrix product (kernels/tiled.py)
TILE = 16


def tiled_matmul_forward(A, dA, B, dB, C, dC):
    """C = A B and dC = dA B + A dB, with four shared tiles per step."""
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    sda = cuda.shared.array((TILE, TILE), float32)
    sdb = cuda.shared.array((TILE, TILE), float32)
    col, row = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n = A.shape[0]
    acc, dacc = float32(0.0), float32(0.0)
    for step in range(cuda.gridDim.x):
        k = step * TILE
        inside_a, inside_b = row < n and k + tx < n, col < n and k + ty < n
        sa[ty, tx] = A[row, k + tx] if inside_a else float32(0.0)
        sda[ty, tx] = dA[row, k + tx] if inside_a else float32(0.0)
        sb[ty, tx] = B[k + ty, col] if inside_b else float32(0.0)
        sdb[ty, tx] = dB[k + ty, col] if inside_b else float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
            dacc += sda[ty, j] * sb[j, tx] + sa[ty, j] * sdb[j, tx]
        cuda.syncthreads()
    if row < n and col < n:
        C[row, col] = acc
        dC[row, col] = dacc


def tiled_matmul_reverse_dA(A, dA, B, dB, C, dC):
    """dA += dC B^T, tiled like the primal: thread (row, col) sums dC[row, :] . B[col, :]."""
    sg = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    col, row = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n = A.shape[0]
    base = cuda.blockIdx.x * TILE
    acc = float32(0.0)
    for step in range(cuda.gridDim.x):
        k = step * TILE
        sg[ty, tx] = dC[row, k + tx] if row < n and k + tx < n else float32(0.0)
        sb[ty, tx] = B[base + ty, k + tx] if base + ty < n and k + tx < n else float32(0.0)   # B[col', k'] rows of this block's columns
        cuda.syncthreads()
        for j in range(TILE):
            acc += sg[ty, j] * sb[tx, j]
        cuda.syncthreads()
    if row < n and col < n:
        dA[row, col] += acc


def tiled_matmul_reverse_dB(A, dA, B, dB, C, dC):
    """dB += A^T dC: thread (row, col) sums A[:, row] . dC[:, col]."""
    sa = cuda.shared.array((TILE, TILE), float32)
    sg = cuda.shared.array((TILE, TILE), float32)
    col, row = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n = A.shape[0]
    base = cuda.blockIdx.y * TILE
    acc = float32(0.0)
    for step in range(cuda.gridDim.x):
        k = step * TILE
        sa[ty, tx] = A[k + ty, base + tx] if k + ty < n and base + tx < n else float32(0.0)
        sg[ty, tx] = dC[k + ty, col] if k + ty < n and col < n else float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[j, ty] * sg[j, tx]
        cuda.syncthreads()
    if row < n and col < n:
        dB[row, col] += acc


def tiled_matmul_reverse_primal(A, dA, B, dB, C, dC):
    """The reverse kernel's primal: C = A B (C ends in its final state) and dC consumed (C was
    overwritten); runs after the two gradient kernels, which read dC."""
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    col, row = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
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
        dC[row, col] = 0


# ---------------------------------------------------------------- tree reduction in a while loop
def tree_sum_while_reverse(out, dout, x, dx):
    """out[0] += sum x^2 (as the primal: tree, one atomic per block); dx[i] += 2 x[i] dout[0]."""
    sh = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = float32(0.0)
    if i < x.shape[0]:
        xi = x[i]
        dx[i] += float32(2.0) * xi * dout[0]
        v = xi * xi
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


# ---------------------------------------------------------------- n-body tile loop (kernels/tiled.py)
BODIES = 64
SOFTENING = 0.01


def nbody_accel_reverse(pos, dpos, mass, acc, dacc):
    """acc_i = sum_j m_j d_ij / r_ij^3 (d_ij = p_j - p_i, r^2 = |d|^2 + eps). Its Jacobian block
    for the pair is G_ij = (I - 3 d d^T / r^2) / r^3, even in d, so the adjoint is a gather with no
    atomics: dp_i += sum_j G_ij (m_i dacc_j - m_j dacc_i). Also writes acc (its final state) and
    consumes dacc (acc was overwritten), after a grid-wide pass: dacc is read by every thread, so it
    is zeroed by nbody_accel_reverse_consume."""
    sp = cuda.shared.array((BODIES, 3), float32)
    sg = cuda.shared.array((BODIES, 3), float32)
    sm = cuda.shared.array(BODIES, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    n = pos.shape[0]
    inside = i < n
    xi = pos[i, 0] if inside else float32(0.0)
    yi = pos[i, 1] if inside else float32(0.0)
    zi = pos[i, 2] if inside else float32(0.0)
    mi = mass[i] if inside else float32(0.0)
    gxi = dacc[i, 0] if inside else float32(0.0)
    gyi = dacc[i, 1] if inside else float32(0.0)
    gzi = dacc[i, 2] if inside else float32(0.0)
    ax, ay, az = float32(0.0), float32(0.0), float32(0.0)
    px, py, pz = float32(0.0), float32(0.0), float32(0.0)
    for tile in range(cuda.gridDim.x):
        j = tile * BODIES + t
        ok = j < n
        sp[t, 0] = pos[j, 0] if ok else float32(0.0)
        sp[t, 1] = pos[j, 1] if ok else float32(0.0)
        sp[t, 2] = pos[j, 2] if ok else float32(0.0)
        sg[t, 0] = dacc[j, 0] if ok else float32(0.0)
        sg[t, 1] = dacc[j, 1] if ok else float32(0.0)
        sg[t, 2] = dacc[j, 2] if ok else float32(0.0)
        sm[t] = mass[j] if ok else float32(0.0)
        cuda.syncthreads()
        for k in range(BODIES):
            dx = sp[k, 0] - xi
            dy = sp[k, 1] - yi
            dz = sp[k, 2] - zi
            r2 = dx * dx + dy * dy + dz * dz + float32(SOFTENING)
            inv3 = float32(1.0) / (r2 * math.sqrt(r2))
            w = sm[k] * inv3
            ax += w * dx
            ay += w * dy
            az += w * dz
            # v = m_i dacc_j - m_j dacc_i; G v = inv3 (v - 3 d (d . v) / r2)
            vx = mi * sg[k, 0] - sm[k] * gxi
            vy = mi * sg[k, 1] - sm[k] * gyi
            vz = mi * sg[k, 2] - sm[k] * gzi
            s = float32(3.0) * (dx * vx + dy * vy + dz * vz) / r2
            px += inv3 * (vx - s * dx)
            py += inv3 * (vy - s * dy)
            pz += inv3 * (vz - s * dz)
        cuda.syncthreads()
    if inside:
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az
        dpos[i, 0] += px
        dpos[i, 1] += py
        dpos[i, 2] += pz


def nbody_accel_reverse_consume(pos, dpos, mass, acc, dacc):
    i = cuda.grid(1)
    if i < pos.shape[0]:
        dacc[i, 0] = 0
        dacc[i, 1] = 0
        dacc[i, 2] = 0
