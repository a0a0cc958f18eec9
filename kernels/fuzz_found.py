"""Kernels of the defects the kernel fuzzer (harness fuzz, docs/fuzz.md) found, reduced by hand."""
import math

from numba import cuda, float64


def atomic_add_and_min(acc, x, y, idx):
    """Campaign seed 175: atomic add and atomic min on the same elements of a differentiable array.
    The final value depends on the order in which threads arrive (add then min differs from min
    then add), so no winner exists: forward mode gave acc[0] / y[0] = 1 where finite differences
    give 0, and the reverse launch hung on the simulator. Now refused at the atomic's line."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(acc, idx[i] % 3, y[i])
        cuda.atomic.min(acc, idx[i] % 3, 0.01 * x[i])


def atomic_min_with_old_value(out, x, acc, cnt):
    """Campaign seed 218: an atomic's old value (a per-thread ticket) beside an atomic min on a
    differentiable array. The passes that find the min's winner replay the kernel without its
    atomics, so the old value was undefined there: NameError in both modes. Now refused."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        ticket = cuda.atomic.add(cnt, i, 1)
        cuda.atomic.min(acc, i % 3, 1.88 + x[i])
        out[i] = x[i] * (ticket + 1)


def two_atomic_max(acc, x, idx):
    """Campaign seed 766, reduced: two atomic.max statements on one array (each thread competes twice)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t1 = x[i] + x[i]
        cuda.atomic.max(acc, idx[i] % 3, t1)
        t2 = math.pow(1.2 + x[i] * x[i], 0.98)
        cuda.atomic.max(acc, idx[i] % 3, t2)


def two_atomic_min_2d(acc, x):
    """Sibling of two_atomic_max: min twice on one array, from a 2-D launch."""
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        cuda.atomic.min(acc, (i + j) % 2, x[i, j] * x[i, j])
        cuda.atomic.min(acc, (i + j) % 2, 0.5 * x[i, j] + 0.1)


@cuda.jit(device=True)
def _compete(acc, k, v):
    cuda.atomic.max(acc, k, v)


def two_atomic_max_via_helper(acc, x):
    """Sibling of two_atomic_max: the second max sits in a device helper (inlined)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.max(acc, i % 2, x[i])
        _compete(acc, i % 2, math.sin(x[i]))


def atomic_max_recomputed_winner(out, x, y, a, idx, n, acc, cnt):
    """GPU campaign seed 254, as generated: a winner found by comparing a value recomputed in
    another kernel. On the H200 the reverse gave acc[0] its own cotangent (AD 1) although a thread
    won: the value compared in the winner passes differed in its last bit from the one in the
    derivative kernel (each kernel is compiled on its own, fused multiply-adds differ)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        t2 = x[idx[i]]
        v1 = a / (1.5 + t2 * t2)
        t3 = y[(i + 1) % 13]
        if t3 < -0.49:
            v1 = 1.64
        else:
            v1 = v1 * math.ldexp((y[(i + 1) % 13]), 2)
        v4 = v1
        t5 = math.sin(v1)
        if t5 > 0.09:
            t6 = x[idx[i]]
            v4 = math.hypot((max(y[i], x[idx[i]])), 1.0 + (math.fmod((x[12 - i]), 0.7 + t6 * t6)))
        else:
            v4 = v4 * math.sin(a)
        v7 = math.fmod(y[i], 0.7 + v4 * v4)
        v8 = x[idx[i]]
        t9 = math.acosh(1.5 + v8 * v8)
        cuda.atomic.max(acc, idx[i] % 3, t9)
        t10 = math.cosh(math.tanh(v8))
        out[i] = math.atan2((1.45 + a), 1.0 + t10 * t10) + 0.5 * x[i] + 0.28 * v1 + 0.31 * v4 + 0.76 * v7 + 0.76 * v8


def atomic_min_fused_value(acc, x, y):
    """Sibling: the competing value is a multiply-add whose product the derivative also needs."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        p = x[i] * y[i]
        v = p + 0.3 * x[i] + math.sqrt(1.0 + p * p)
        cuda.atomic.min(acc, i % 4, v)


def while_recompute_unassemblable(out, x, y, a, idx, n, acc, cnt):
    """GPU campaign seed 192, as generated. NVVM 13 optimised the reverse sweep (a while loop
    recomputed from its entry for each iteration) into PTX with a branch to a label it had
    deleted, which ptxas rejects ("Unknown symbol '$L__BB0_58'"): an engine crash on the H200
    that the PTX tier did not see. The tier now assembles, and such a kernel is compiled again
    without NVVM's optimisation."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        v1 = x[idx[i]] * a
        t2 = x[10 - i]
        t3 = math.acosh(1.5 + t2 * t2)
        if t3 > 0.61:
            v1 = y[(i + 1) % 11]
        else:
            v1 = v1 * x[idx[i]]
        t5 = x[idx[i]]
        v4 = math.exp(math.tanh(x[i])) if t5 <= 0.07 else x[idx[i]] + v1
        t8 = 1.22
        acc6 = math.sqrt(1.0 + t8 * t8)
        k7 = 0
        while k7 < n:
            acc6 = acc6 * 0.5 + math.atan((x[10 - i]))
            k7 += 1
        out[i] = math.hypot(((y[(i + 1) % 11]) * x[i]), 1.0 + math.erfc(v4)) + 0.5 * x[i] + 0.36 * v1 + 0.49 * v4 + 0.49 * acc6


def atomic_max_fused_value_2d(acc, x, y):
    """Sibling from a 2-D launch: atomic max of a multiply-add whose product the derivative needs."""
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        p = x[i, j] * y[i, j]
        cuda.atomic.max(acc, (i + 2 * j) % 3, p + 0.25 * y[i, j] - math.sqrt(1.0 + p * p))


@cuda.jit(device=True)
def seed1020_helper(a, b):
    if a > b:
        return a * b, a
    return math.tanh(a) + b, a * 0.5


def constant_branch_in_grid_stride_loop(out, x, y, a, idx, n, acc, cnt):
    """Campaign seed 1020 on the H200: `t10 = 1.04; if t10 > 0.46:` inside a grid-stride loop. numba
    prunes a constant branch before typing; the reverse sweep recomputed the loop body with its own
    copy of the branch, numba pruned one copy only, and a value defined on the pruned side (v9 of
    the else) had no type: the reverse kernel failed to compile (an engine crash). The front end
    now folds constant branches as numba does."""
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        acc1 = x[i] + (x[58 - i])
        for k2 in range(2):
            acc1 = acc1 * 0.55 + abs((y[(i + 1) % 59])) * (k2 + 1)
        v3 = math.fabs(x[idx[i]])
        v4 = math.radians(30.0 * x[i])
        t5 = math.erfc(x[idx[i]])
        if t5 >= -0.27:
            t6 = math.sin((y[(i + 1) % 59]))
            v4 = math.pow(1.2 + t6 * t6, math.sin((y[i] % (0.7 + acc1 * acc1))))
        acc7 = math.log1p(a * a)
        for k8 in range(2, n + 2, 1):
            if k8 % 2 == 1:
                continue
            acc7 = acc7 * 0.66 + math.pow(1.2 + v3 * v3, 0.7)
        v9 = math.ldexp(1.59, 2)
        t10 = 1.04
        if t10 > 0.46:
            t11 = x[58 - i]
            v9 = -(math.remainder(v3, 0.9 + t11 * t11))
        else:
            v9 = v9 * acc1 / (1.5 + v4 * v4)
        t12 = -v9
        out[i] = math.pow(1.2 + t12 * t12, 0.7) + 0.5 * x[i] + 0.24 * acc1 + 0.5 * v3 + 0.67 * v4 + 0.62 * acc7 + 0.47 * v9


@cuda.jit(device=True)
def seed740_helper(a, b):
    return math.tanh(a) + b, a * 0.5


def extremum_tie_before_barrier(out, x, y, a, idx, n, acc, cnt):
    """Campaign seed 740 on the H200: every thread applies the same atomic min to acc[0] (a tie
    the initial value loses), then stores into shared memory before a barrier. In the forward
    kernel the winner (thread 0) alone stores acc's tangent in a branch; on the first launch of the
    freshly loaded kernel thread 7 then read sh[0] before thread 0's store (a stale value from the
    previous kernel): a wrong primal and tangent at out[7], on the GPU only. Barriers in generated
    kernels now follow a block fence (harness/engine/emission/emit_state.py: barrier)."""
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    sh = cuda.shared.array(32, float64)
    t1 = y[i] * x[idx[i]]
    t2 = math.cos(0.41)
    v3, v4 = seed740_helper(t1, t2)
    t5 = 0.39
    t6 = math.pow(1.2 + t5 * t5, 0.7)
    cuda.atomic.min(acc, 0, t6)
    t7 = math.sin(abs(x[idx[i]]))
    sh[t] = t7
    cuda.syncthreads()
    v8 = sh[(t + 25) % 32] * t7
    t9 = y[i]
    out[i] = math.cos((math.pow(1.2 + t9 * t9, math.sin(x[i])))) + 0.5 * x[i] + 0.49 * v3 + 0.36 * v4 + 0.46 * v8


def remainder_of_copysign(out, x, y, a, idx, n, acc, cnt):
    """GPU campaign seed 1652, as generated. On an H200 (CUDA 13.0), numba-cuda's compile of this
    kernel returns |remainder(copysign(acc3, acc3), c)|: the result's sign is lost wherever it is
    negative, while the engine's derivative kernels, which compute the same expression beside
    their tangents, get it right. The same expression in CUDA C++ (nvcc -O3) is wrong too
    (reproducers/cuda_remainder_of_copysign.cu), so the fault is CUDA's compiler, not numba's."""
    i = cuda.grid(1)
    if i >= out.shape[0]:
        return
    v1 = math.sin(0.79)
    t2 = math.radians(30.0 * x[idx[i]])
    if t2 < 0.16:
        v1 = 0.85
    acc3 = y[(i + 1) % 16]
    for k4 in range(n + 1, 0, -1):
        if k4 % 2 == 1:
            continue
        acc3 = acc3 * 0.73 + y[(i + 1) % 16]
        old5 = cuda.atomic.add(cnt, i, 1)
        cuda.atomic.add(acc, old5 % 3, acc3)
    v6 = 0.8
    v7 = math.fabs(x[i])
    t8 = 1.74 + v6
    if t8 > 0.11:
        t9 = 0.51
        t10 = math.atan2(y[i], 1.0 + t9 * t9)
        v7 = math.remainder((math.copysign(acc3, acc3)), 0.9 + t10 * t10)
    else:
        v7 = v7 * min(v1, x[idx[i]])
    out[i] = x[idx[i]] + 0.5 * x[i] + 0.37 * v1 + 0.48 * acc3 + 0.27 * v6 + 0.49 * v7
