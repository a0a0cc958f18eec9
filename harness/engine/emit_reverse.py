"""Reverse (adjoint) mode: the primal replayed in registers (forward sweep), then each statement's
adjoint in reverse order through the emitter registered for its kind (emit_adjoints.py) with
control flow mirrored (reverse sweep). Functions over the emit state (emit_state.py)."""
from __future__ import annotations

from . import emit_adjoints, emit_loops, emit_parallel, emit_prefetch, emit_primal
from .emit_state import EmitState
from .ir import Alloc, Assign, If, Loop, Store
from .syntax import atom


def reverse_replay(em: EmitState, stmts):
    for s in stmts:
        if isinstance(s, Loop):
            if em.taping:
                emit_loops.loop_sweep(em, s, stores=True)
            else:
                emit_loops.plain_loop(em, s, reverse_replay, tangents=False)
            continue
        if isinstance(s, Alloc) and em.taping:
            emit_primal.primal(em, s)
            emit_parallel.shadow_alloc(em, s, zero=True)
            continue
        if isinstance(s, If):
            emit_primal.emit_if(em, s, lambda: (reverse_replay(em, s.body), primal_phis(em, s.phis, 1)),
                         lambda: (reverse_replay(em, s.orelse), primal_phis(em, s.phis, 2)))
        else:
            if em.taping and isinstance(s, Store) and id(stmts) not in em.early_prefetch:
                emit_prefetch.hoist_prefetch(em, stmts)
            emit_primal.primal(em, s)
            if isinstance(s, Assign):
                em.defined.add(s.target)
    if em.taping and id(stmts) not in em.early_prefetch:
        emit_prefetch.hoist_prefetch(em, stmts)


def primal_phis(em: EmitState, phis, side: int):
    for phi in phis:
        em.line(f"{phi[0]} = {atom(phi[side])}")
        em.defined.add(phi[0])


def adjoint_inits(em: EmitState):
    names = sorted(v for v in em.varied)
    for name in names:
        for j in em.lanes():
            em.line(f"{em.d(name, j)} = {em.ftype(name)}(0.0)")


def accumulate_array(em: EmitState, array: str, lane: int, index, value: str):
    """shadow[index] += value (the 'accumulate' emitter)."""
    em.emitters["accumulate"](em, array, lane, index, value)


def reverse(em: EmitState, stmts):
    saved = em.prefetched
    early = em.early_prefetch.pop(id(stmts), None)
    # shadows read during the forward sweep (before its first store), or else here
    em.prefetched = early if early is not None else emit_prefetch.emit_prefetch(em, stmts)
    _reverse(em, stmts)
    em.prefetched = saved


def _reverse(em: EmitState, stmts):
    for s in reversed(stmts):
        kind = emit_adjoints.statement_kind(em, s)
        if kind is not None:
            em.emitters[kind](em, s)


def reverse_phis(em: EmitState, phis, side: int):
    for phi in phis:
        target, src = phi[0], phi[side]
        if target in em.varied and em.is_varied(src):
            for j in em.lanes():
                em.line(f"{em.d(src, j)} += {em.d(target, j)}")
