"""Differentiating atomic max/min through the winning contribution.

The final value of `cuda.atomic.max(A, i, v)` is the largest of A's initial value and every
thread's v, so its derivative flows to one contributor: the winner. Which one won is known only
after the whole grid ran, so two passes launch first, replaying the kernel without its stores:
pass 1 computes the final values into a scratch copy S of A and records each contribution's v in
V, pass 2 picks the lowest contribution whose recorded v equals S[i] into W[i] (a tie with A's
initial value I[i] leaves it the winner). The derivative kernel then moves A[i]'s tangent or
cotangent to or from the winner only.

Every statement on one array shares its S, I, W and V, so a contribution is named by its thread
and statement: thread id * n + j for statement j of the array's n. That name is unique when each
statement runs at most once per thread. When one runs in a dynamic loop (`counted` kernels), a
contribution is named by its thread and its place among the thread's max/min executions instead:
thread id * K + c, c counted up at every execution in program order (K = tape_size), so pass 1,
pass 2 and the derivative kernel, which run the same statements in the same order, name every
execution alike. The reverse sweep replays a loop's iterations out of order, so each loop around
such a statement tapes the count at the start of its iterations and its reverse iterations
restore it (emit_loops.py), and each execution keeps its name in a register of its own for the
adjoint. A thread that runs more than K of them sets V's last entry in pass 1, and the launch
is refused.

The passes and the derivative kernel compare the recorded V, never a value recomputed in another
kernel: on a GPU each kernel is compiled on its own, and the compiler may contract `a * b + c`
into one fused multiply-add in one kernel and not in another, so the same expression can differ in
its last bit between kernels and no contribution would equal S. V starts as NaN, which equals
nothing, so a contribution that pass 1 did not make never wins.
Functions over the emit state (emit_state.py); the launcher allocates S, I, W and V and runs the passes.
"""
from __future__ import annotations

from harness.engine.emission import emit_parallel, emit_plain_loops, emit_primal
from harness.engine.emission.emit_state import EXTREMUM_SCRATCH, EmitState, body_text, extremum_scratch_count
from harness.engine.ir.ssa import Atomic, If, Loop, Store, walk
from harness.engine.emission.syntax import atom, index_text

GLOBAL_THREAD_ID = ("((cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z))"
                    " * (cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z) + cuda.threadIdx.x"
                    " + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z))")
CONTRIBUTION = "_xc"     # the contribution's name, bound before each use: V's index, W's entries


COUNT = "_xn"            # counted kernels: the thread's max/min executions so far


def counted(ir, extrema) -> bool:
    """Whether some atomic max/min of `extrema` runs inside a dynamic loop."""
    ids = {id(s) for s in extrema}
    return any(id(t) in ids for s in walk(ir.body) if isinstance(s, Loop) for t in walk(list(s.header) + list(s.body)))


def holds_extremum(em: EmitState, loop: Loop) -> bool:
    """A loop of a counted kernel whose iterations run max/min statements: it tapes the count."""
    return em.extremum_counted and any(id(t) in em.extrema for t in walk(list(loop.header) + list(loop.body)))


def contribution_id(em: EmitState, s: Atomic) -> str:
    """The name of this thread's contribution through statement s (lower wins a tie); int64, so
    that thread id * n does not overflow."""
    if em.extremum_counted:
        size = em.options.tape_size
        return f"int64{GLOBAL_THREAD_ID} * {size} + min({COUNT}, {size - 1})"
    j, n = em.extremum_rank.get(id(s), (0, 1))
    return f"int64{GLOBAL_THREAD_ID}" if n == 1 else f"int64{GLOBAL_THREAD_ID} * {n} + {j}"


def own_name(em: EmitState, s: Atomic) -> str:
    """The register that keeps this statement's latest contribution name (counted kernels)."""
    j, _ = em.extremum_rank.get(id(s), (0, 1))
    return f"{CONTRIBUTION}{em.extrema[id(s)]}_{j}"


def count_start(em: EmitState):
    """The start of a counted kernel: no execution yet, every statement's name defined."""
    if not em.extremum_counted:
        return
    em.line(f"{COUNT} = 0")
    for t in walk(em.ir.body):
        if id(t) in em.extrema:
            em.line(f"{own_name(em, t)} = int64(0)")


def record_contribution(em: EmitState, s: Atomic, flag_overflow: bool = False):
    """Where statement s runs (in program order: a pass, a forward kernel, a reverse kernel's
    forward sweep or replay): name this execution and count it."""
    if not em.extremum_counted:
        return
    em.line(f"{own_name(em, s)} = {contribution_id(em, s)}")
    if flag_overflow:             # pass 1: V's last entry tells the launcher
        k = em.extrema[id(s)]
        em.line(f"if {COUNT} >= {em.options.tape_size}:")
        em.line(f"    _xV{k}[_xV{k}.shape[0] - 1] = 1.0")
    em.line(f"{COUNT} += 1")


def bind_contribution(em: EmitState, s: Atomic, counting: bool = True):
    """_xc = this contribution's name. Counted kernels name the execution where it runs
    (`counting`), and the reverse sweep's adjoint reads the name its replay recorded."""
    if em.extremum_counted:
        if counting:
            record_contribution(em, s, flag_overflow=False)
        em.line(f"{CONTRIBUTION} = {own_name(em, s)}")
        return
    em.line(f"{CONTRIBUTION} = {contribution_id(em, s)}")


def recorded_value(k: int) -> str:
    """This contribution's value to the array with scratch index k, as pass 1 recorded it."""
    return f"_xV{k}[{CONTRIBUTION}]"


def is_extremum(em: EmitState, s) -> bool:
    return isinstance(s, Atomic) and id(s) in em.extrema


def stored_value(em: EmitState, s: Atomic) -> str:
    """The value as the array holds it: compare in the array's dtype, or a float64 value that
    was rounded into a float32 array would never equal the final element."""
    return f"{em.ir.param(s.array).dtype}({atom(s.value)})"


def won(em: EmitState, s: Atomic) -> str:
    """This contribution became the final value (and the initial value did not keep it)."""
    k, idx = em.extrema[id(s)], index_text(s.index)
    v = recorded_value(k)
    return f"{v} == _xS{k}[{idx}] and {v} != _xI{k}[{idx}] and _xW{k}[{idx}] == {CONTRIBUTION}"


def extremum_tangent(em: EmitState, s: Atomic):
    bind_contribution(em, s)
    em.line(f"if {won(em, s)}:")
    for j in em.lanes():
        value = em.d(s.value, j) if em.is_varied(s.value) else "0"
        em.line(f"    {em.d(s.array, j)}[{index_text(s.index)}] = {value}")


def extremum_adjoint(em: EmitState, s: Atomic):
    bind_contribution(em, s, counting=False)
    em.line(f"if {won(em, s)}:   # the winner takes the final element's cotangent")
    for j in em.lanes():
        shadow = f"{em.d(s.array, j)}[{index_text(s.index)}]"
        if em.is_varied(s.value):
            em.line(f"    {em.d(s.value, j)} += {shadow}")
        em.line(f"    {shadow} = 0")


def extremum_pass(em: EmitState, stmts, phase: int):
    """Pass 1 (phase 1): S[i] = the final value, V = each contribution's value. Pass 2: W[i] =
    the lowest winning contribution. The kernel is replayed without stores to its parameter
    arrays; its dynamic loops run as written, each iteration replayed the same way (a counted
    kernel's max/min in them are named by count)."""
    params = {p.name for p in em.ir.params}
    for s in stmts:
        if isinstance(s, If):
            emit_primal.emit_if(em, s, lambda: (extremum_pass(em, s.body, phase), emit_primal.primal_phis(em, s.phis, 1)),
                                lambda: (extremum_pass(em, s.orelse, phase), emit_primal.primal_phis(em, s.phis, 2)))
        elif isinstance(s, Loop):
            emit_plain_loops.plain_loop(em, s, lambda em_, body: extremum_pass(em_, body, phase), tangents=False)
        elif isinstance(s, Atomic):
            if not is_extremum(em, s):
                continue
            k, idx = em.extrema[id(s)], index_text(s.index)
            if em.extremum_counted:
                record_contribution(em, s, flag_overflow=phase == 1)
                em.line(f"{CONTRIBUTION} = {own_name(em, s)}")
            else:
                bind_contribution(em, s)
            v = recorded_value(k)
            if phase == 1:
                em.line(f"{v} = {stored_value(em, s)}")
                em.line(f"cuda.atomic.{s.op}(_xS{k}, {emit_parallel.atomic_index(em, s.index)}, {v})")
            else:
                em.line(f"if {v} == _xS{k}[{idx}] and {v} != _xI{k}[{idx}]:")
                em.line(f"    cuda.atomic.min(_xW{k}, {emit_parallel.atomic_index(em, s.index)}, {CONTRIBUTION})")
        elif isinstance(s, Store) and s.array in params:
            continue
        else:
            emit_primal.primal(em, s)


def extremum_function(em: EmitState, fname: str, phase: int) -> str:
    """The `def` text of pass `phase` (1: final values into S and each contribution's value into
    V, 2: winners into W)."""
    count_start(em)
    extremum_pass(em, em.ir.body, phase)
    params = [p.name for p in em.ir.params] + [f"_x{n}{k}" for k in range(extremum_scratch_count(em))
                                               for n in (("S", "V") if phase == 1 else EXTREMUM_SCRATCH)]
    return f"def {fname}({', '.join(params)}):\n" + (body_text(em.lines) or "    pass") + "\n"
