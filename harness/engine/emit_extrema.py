"""Differentiating atomic max/min through the winning thread.

The final value of `cuda.atomic.max(A, i, v)` is the largest of A's initial value and every
thread's v, so its derivative flows to one contributor: the winner. Which thread won is known only
after the whole grid ran, so two passes launch first, replaying the kernel without its stores:
pass 1 computes the final values into a scratch copy S of A, pass 2 picks the lowest contribution
whose v equals S[i] into W[i] (a tie with A's initial value I[i] leaves it the winner). The
derivative kernel then moves A[i]'s tangent or cotangent to or from the winner only.
Every statement on one array shares its S, I and W, so a contribution is named by its thread and
statement: thread id * n + j for statement j of the array's n (the thread id alone when n is 1).
Each statement runs at most once per thread (analysis.check_extremum refuses one in a dynamic
loop), so that name is unique and one contribution wins each element.
Functions over the emit state (emit_state.py); the launcher allocates S, I and W and runs the passes.
"""
from __future__ import annotations

from . import emit_loops, emit_parallel, emit_primal, emit_reverse
from .emit_state import EmitState
from .ir import Atomic, If, Loop, Store
from .syntax import atom, index_text

GLOBAL_THREAD_ID = ("((cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z))"
                    " * (cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z) + cuda.threadIdx.x"
                    " + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z))")


def extremum_params(em: EmitState) -> list[str]:
    return [f"_x{name}{k}" for k in range(scratch_count(em)) for name in ("S", "I", "W")]


def scratch_count(em: EmitState) -> int:
    """One set of scratch arrays per targeted array (codegen.py numbers them)."""
    return len(set(em.extrema.values()))


def contribution_id(em: EmitState, s: Atomic) -> str:
    """The name of this thread's contribution through statement s (lower wins a tie)."""
    j, n = em.extremum_rank.get(id(s), (0, 1))
    return GLOBAL_THREAD_ID if n == 1 else f"int64{GLOBAL_THREAD_ID} * {n} + {j}"   # no int32 overflow


def is_extremum(em: EmitState, s) -> bool:
    return isinstance(s, Atomic) and id(s) in em.extrema


def stored_value(em: EmitState, s: Atomic) -> str:
    """The value as the array holds it: compare in the array's dtype, or a float64 value that
    was rounded into a float32 array would never equal the final element."""
    return f"{em.ir.param(s.array).dtype}({atom(s.value)})"


def won(em: EmitState, s: Atomic) -> str:
    """This thread's value became the final one (and the initial value did not keep it)."""
    k, idx, v = em.extrema[id(s)], index_text(s.index), stored_value(em, s)
    return f"{v} == _xS{k}[{idx}] and {v} != _xI{k}[{idx}] and _xW{k}[{idx}] == {contribution_id(em, s)}"


def extremum_tangent(em: EmitState, s: Atomic):
    em.line(f"if {won(em, s)}:")
    for j in em.lanes():
        value = em.d(s.value, j) if em.is_varied(s.value) else "0"
        em.line(f"    {em.d(s.array, j)}[{index_text(s.index)}] = {value}")


def extremum_adjoint(em: EmitState, s: Atomic):
    em.line(f"if {won(em, s)}:   # the winner takes the final element's cotangent")
    for j in em.lanes():
        shadow = f"{em.d(s.array, j)}[{index_text(s.index)}]"
        if em.is_varied(s.value):
            em.line(f"    {em.d(s.value, j)} += {shadow}")
        em.line(f"    {shadow} = 0")


def extremum_pass(em: EmitState, stmts, phase: int):
    """Pass 1 (phase 1): S[i] = the final value. Pass 2: W[i] = the lowest winning contribution.
    The kernel is replayed without stores to its parameter arrays; its dynamic loops run as
    written (they hold no max/min atomic), each iteration replayed the same way."""
    params = {p.name for p in em.ir.params}
    for s in stmts:
        if isinstance(s, If):
            emit_primal.emit_if(em, s, lambda: (extremum_pass(em, s.body, phase), emit_reverse.primal_phis(em, s.phis, 1)),
                                lambda: (extremum_pass(em, s.orelse, phase), emit_reverse.primal_phis(em, s.phis, 2)))
        elif isinstance(s, Loop):
            emit_loops.plain_loop(em, s, lambda em_, body: extremum_pass(em_, body, phase), tangents=False)
        elif isinstance(s, Atomic):
            if not is_extremum(em, s):
                continue
            k, idx, v = em.extrema[id(s)], index_text(s.index), stored_value(em, s)
            if phase == 1:
                em.line(f"cuda.atomic.{s.op}(_xS{k}, {emit_parallel.atomic_index(em, s.index)}, {v})")
            else:
                em.line(f"if {v} == _xS{k}[{idx}] and {v} != _xI{k}[{idx}]:")
                em.line(f"    cuda.atomic.min(_xW{k}, {emit_parallel.atomic_index(em, s.index)}, {contribution_id(em, s)})")
        elif isinstance(s, Store) and s.array in params:
            continue
        else:
            emit_primal.primal(em, s)


def extremum_function(em: EmitState, fname: str, phase: int) -> str:
    """The `def` text of pass `phase` (1: final values into S, 2: winners into W)."""
    extremum_pass(em, em.ir.body, phase)
    params = [p.name for p in em.ir.params] + [f"_x{n}{k}" for k in range(scratch_count(em))
                                               for n in (("S",) if phase == 1 else ("S", "I", "W"))]
    return f"def {fname}({', '.join(params)}):\n" + ("\n".join(em.lines) or "    pass") + "\n"
