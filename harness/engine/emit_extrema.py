"""Differentiating atomic max/min through the winning thread.

The final value of `cuda.atomic.max(A, i, v)` is the largest of A's initial value and every
thread's v, so its derivative flows to one contributor: the winner. Which thread won is known only
after the whole grid ran, so two passes launch first, replaying the kernel without its stores:
pass 1 computes the final values into a scratch copy S of A, pass 2 picks the lowest thread id
among the threads whose v equals S[i] into W[i] (a tie with A's initial value I[i] leaves it the
winner). The derivative kernel then moves A[i]'s tangent or cotangent to or from the winner only.
Functions over the emit state (emit_state.py); the launcher allocates S, I and W and runs the passes.
"""
from __future__ import annotations

from . import emit_parallel, emit_primal
from .emit_state import EmitState
from .ir import Atomic, If, Store
from .syntax import atom, index_text

GLOBAL_THREAD_ID = ("((cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z))"
                    " * (cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z) + cuda.threadIdx.x"
                    " + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z))")


def is_extremum(em: EmitState, s) -> bool:
    return isinstance(s, Atomic) and id(s) in em.extrema


def stored_value(em: EmitState, s: Atomic) -> str:
    """The value as the array holds it: compare in the array's dtype, or a float64 value that
    was rounded into a float32 array would never equal the final element."""
    return f"{em.ir.param(s.array).dtype}({atom(s.value)})"


def won(em: EmitState, s: Atomic) -> str:
    """This thread's value became the final one (and the initial value did not keep it)."""
    k, idx, v = em.extrema[id(s)], index_text(s.index), stored_value(em, s)
    return f"{v} == _xS{k}[{idx}] and {v} != _xI{k}[{idx}] and _xW{k}[{idx}] == {GLOBAL_THREAD_ID}"


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
    """Pass 1 (phase 1): S[i] = the final value. Pass 2: W[i] = the lowest winning thread.
    The kernel is replayed without stores to its parameter arrays."""
    params = {p.name for p in em.ir.params}
    for s in stmts:
        if isinstance(s, If):
            emit_primal.emit_if(em, s, lambda: (extremum_pass(em, s.body, phase), emit_primal.primal_phis(em, s.phis, 1)),
                                lambda: (extremum_pass(em, s.orelse, phase), emit_primal.primal_phis(em, s.phis, 2)))
        elif isinstance(s, Atomic):
            if not is_extremum(em, s):
                continue
            k, idx, v = em.extrema[id(s)], index_text(s.index), stored_value(em, s)
            if phase == 1:
                em.line(f"cuda.atomic.{s.op}(_xS{k}, {emit_parallel.atomic_index(em, s.index)}, {v})")
            else:
                em.line(f"if {v} == _xS{k}[{idx}] and {v} != _xI{k}[{idx}]:")
                em.line(f"    cuda.atomic.min(_xW{k}, {emit_parallel.atomic_index(em, s.index)}, {GLOBAL_THREAD_ID})")
        elif isinstance(s, Store) and s.array in params:
            continue
        else:
            emit_primal.primal(em, s)


def extremum_function(em: EmitState, fname: str, phase: int) -> str:
    """The `def` text of pass `phase` (1: final values into S, 2: winners into W)."""
    extremum_pass(em, em.ir.body, phase)
    params = [p.name for p in em.ir.params] + [f"_x{n}{k}" for k in range(len(em.extrema))
                                               for n in (("S",) if phase == 1 else ("S", "I", "W"))]
    return f"def {fname}({', '.join(params)}):\n" + ("\n".join(em.lines) or "    pass") + "\n"
