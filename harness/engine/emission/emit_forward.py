"""Forward (tangent) mode: the primal statements, each followed by its tangent. Functions over the
emit state (emit_state.py)."""
from __future__ import annotations

from harness.engine.emission import emit_extrema, emit_parallel, emit_plain_loops, emit_primal
from harness.engine.analyses.activity import SHUFFLES
from harness.engine.emission.emit_state import EmitState
from harness.engine.ir.ssa import Alloc, Assign, Atomic, If, Load, Loop, Store
from harness.engine.emission.syntax import atom, index_text, partial_text


def forward(em: EmitState, stmts):
    for s in stmts:
        if isinstance(s, Loop):
            emit_plain_loops.plain_loop(em, s, forward, tangents=True)
            continue
        if isinstance(s, If):
            emit_primal.emit_if(em, s, lambda: (forward(em, s.body), forward_phis(em, s.phis, 1)),
                                lambda: (forward(em, s.orelse), forward_phis(em, s.phis, 2)))
            continue
        emit_primal.primal(em, s)
        if isinstance(s, Alloc):
            emit_parallel.shadow_alloc(em, s, zero=False)
        elif emit_extrema.is_extremum(em, s):
            emit_extrema.extremum_tangent(em, s)
        elif isinstance(s, Atomic) and s.array in em.diff_arrays and em.is_varied(s.value):
            em.emitters["tangent-atomic"](em, s)
        if isinstance(s, Assign) and s.target in em.varied:
            for j in em.lanes():
                em.line(f"{em.d(s.target, j)} = {tangent(em, s, j)}")
        elif isinstance(s, Store) and s.array in em.diff_arrays:
            for j in em.lanes():
                value = em.d(s.value, j) if em.is_varied(s.value) else "0"
                em.line(f"{em.d(s.array, j)}[{index_text(s.index)}] = {value}")


def tangent_atomic(em: EmitState, s: Atomic):
    """The tangent of an atomic add: the same atomic on the shadow (threads contend for it as for
    the primal's target)."""
    for j in em.lanes():
        em.line(f"cuda.atomic.{s.op}({em.d(s.array, j)}, {emit_parallel.atomic_index(em, s.index)}, {em.d(s.value, j)})")


def forward_phis(em: EmitState, phis, side: int):
    for phi in phis:
        target, src = phi[0], phi[side]
        em.line(f"{target} = {atom(src)}")
        if target in em.varied:
            for j in em.lanes():
                value = em.d(src, j) if em.is_varied(src) else f"{em.ftype(target)}(0.0)"
                em.line(f"{em.d(target, j)} = {value}")


def tangent(em: EmitState, s: Assign, lane: int) -> str:
    e = s.expr
    if isinstance(e, Load):
        return f"{em.d(e.array, lane)}[{index_text(e.index)}]"
    if e.op in SHUFFLES:                  # the tangent travels between lanes like the value
        mask, _, k = (atom(a) for a in e.args)
        return f"cuda.{e.op}_sync({mask}, {em.d(e.args[1], lane)}, {k})"
    terms = []
    for k, a in enumerate(e.args):
        if not em.is_varied(a):
            continue
        p = partial_text(e.op, k, e.args, s.target, em.ftype(s.target), e.partials, rules=em.rules)
        da = em.d(a, lane)
        terms.append(da if p == f"{em.ftype(s.target)}(1.0)" else
                     f"-{da}" if p == f"-{em.ftype(s.target)}(1.0)" else f"({p}) * {da}")
    if not terms:                         # e.g. a register initialised from a constant
        return f"{em.ftype(s.target)}(0.0)"
    return " + ".join(terms).replace("+ -", "- ")
