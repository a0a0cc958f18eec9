"""Reverse (adjoint) mode: the primal replayed in registers (forward sweep), then each statement's
adjoint in reverse order through the emitter registered for its kind (emit_adjoints.py) with
control flow mirrored (reverse sweep). Functions over the emit state (emit_state.py)."""
from __future__ import annotations

from harness.engine.emission import coarsen, emit_adjoints, emit_deferred_zeros, emit_extrema, emit_gather, emit_lane_sums, emit_loops, emit_parallel, emit_plain_loops, emit_prefetch, emit_primal, emit_reduce, emit_uniform, replay_needs
from harness.engine.emission.emit_state import EmitState
from harness.engine.emission.emit_uniform import uniform_slots
from harness.engine.analyses.lane_groups import lane_group_reads
from harness.engine.ir.ssa import Alloc, Assign, If, Loop, Store, walk


def reverse_replay(em: EmitState, stmts):
    need = emit_prefetch.index_names(em, stmts) if em.taping and id(stmts) not in em.early_prefetch else None
    for s in stmts:
        if need is not None and need <= em.defined and id(stmts) not in em.early_prefetch:
            em.emitters["hoist-prefetch"](em, stmts)      # as soon as the shadow reads' indices exist
        if isinstance(s, Loop):
            if em.taping:
                emit_loops.loop_sweep(em, s, stores=True)
            else:
                emit_plain_loops.plain_loop(em, s, reverse_replay, tangents=False)
            continue
        if isinstance(s, Alloc) and em.taping:
            emit_primal.primal(em, s)
            emit_parallel.shadow_alloc(em, s, zero=True, fenced=not emit_parallel.zeroing_ordered_later(em, s, stmts))
            continue
        if isinstance(s, If):
            emit_primal.emit_if(em, s, lambda: (reverse_replay(em, s.body), emit_primal.primal_phis(em, s.phis, 1)),
                                lambda: (reverse_replay(em, s.orelse), emit_primal.primal_phis(em, s.phis, 2)))
        else:
            if em.taping and isinstance(s, Store) and id(stmts) not in em.early_prefetch:
                em.emitters["hoist-prefetch"](em, stmts)
            if emit_extrema.is_extremum(em, s):
                emit_extrema.record_contribution(em, s)
            emit_primal.primal(em, s)
            if isinstance(s, Assign):
                em.defined.add(s.target)
                if em.taping:
                    emit_adjoints.hoist_partials(em, s)
    if em.taping and id(stmts) not in em.early_prefetch:
        em.emitters["hoist-prefetch"](em, stmts)


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


# adjoints that only compute registers or add into shadows: queued lane sums may wait across them
_ARITHMETIC = ("assign", "load")
# adjoints a deferred zero of a store's shadow element may wait across (emit_deferred_zeros.py)
_PLAIN_UPDATES = ("assign", "load", "store")


def _reverse(em: EmitState, stmts):
    for s in reversed(stmts):
        kind = emit_adjoints.statement_kind(em, s)
        if kind is not None:
            if kind not in _ARITHMETIC and em.lane_sum_queue:
                emit_lane_sums.flush(em)
            if kind not in _PLAIN_UPDATES and em.zero_pending:
                emit_deferred_zeros.flush(em)
            em.defer_zeros = kind == "store"
            em.emitters[kind](em, s)
            em.defer_zeros = False
    if em.lane_sum_queue:
        emit_lane_sums.flush(em)
    if em.zero_pending:
        emit_deferred_zeros.flush(em)


def reverse_phis(em: EmitState, phis, side: int):
    for phi in phis:
        target, src = phi[0], phi[side]
        if target in em.varied and em.is_varied(src):
            for j in em.lanes():
                em.line(f"{em.d(src, j)} += {em.d(target, j)}")


def _lane_sum_reads(em: EmitState, device: bool) -> dict[int, str]:
    """The reads whose adjoint lane groups sum first (lane_groups.py), less those whose adjoint is
    no shadow update at all or goes to a uniform-index slot (emit_uniform.py) instead."""
    found = lane_group_reads(em.ir, em.sig.owned, device)
    loads = {id(s): s for s in walk(em.ir.body) if id(s) in found}
    return {k: axis for k, axis in found.items()
            if loads[k].target in em.varied and loads[k].expr.array in em.diff_arrays
            and emit_uniform.slot_register(em, loads[k].expr.array, loads[k].expr.index, 0) is None}


def reverse_function_body(em: EmitState, device: bool, fname: str = ""):
    """The body of a reverse kernel (or of a device function's reverse): tape declarations, the
    forward sweep, the adjoint sweep, and the Active scalars' reduction or return. Gathered
    adjoints (emit_gather.py) are computed first and added after the adjoint sweep. A coarsened
    kernel (coarsen.py) runs the sweeps in a loop over virtual blocks and reduces after it."""
    em.taping = True
    if not device:
        em.uniform = uniform_slots(em.ir, em.diff_arrays, em.sig.owned)
    if em.has_loops:
        # a gathered adjoint reads its readers' values in ways the analysis does not follow
        em.replay_needs = None if em.sig.gather else replay_needs.needed(em, emit_adjoints.statement_kind,
                                                                            emit_adjoints.operand_partials)
        em.block_tape = set() if device else emit_loops.block_taped_registers(em)   # callers' threads unknown
        emit_loops.tape_declarations(em, em.ir.body)
    emit_extrema.count_start(em)
    actives = emit_primal.active_scalars(em)
    em.virtual_blocks = not device and em.sig.coarsen > 0
    if em.virtual_blocks:                 # the sums persist across virtual blocks: set up once
        emit_uniform.slot_inits(em)
        coarsen.open_loop(em, actives)
    gather = not device and em.sig.gather
    if gather:
        emit_gather.kernel_start(em, fname)
    em.line("# forward sweep: replay the primal, keeping every value in registers")
    reverse_replay(em, em.ir.body)
    em.line("# reverse sweep: adjoints in reverse statement order")
    adjoint_inits(em)
    em.lane_sums = _lane_sum_reads(em, device)
    if em.lane_sums:
        emit_lane_sums.setup(em, set(em.lane_sums.values()))
    if not em.virtual_blocks:
        emit_uniform.slot_inits(em)
    for r in em.ir.returns if device else []:
        if em.is_varied(r):           # a device function's result is seeded like an Active return
            em.line(f"{em.d(r, 0)} += {em.ftype(r)}(1.0)")
    base = em.emitters
    if gather:
        em.emitters = emit_gather.own_emitters(em)
    reverse(em, em.ir.body)
    em.emitters = base
    if gather:
        emit_gather.kernel_end(em, fname)
    values = coarsen.close_loop(em, actives) if em.virtual_blocks else None
    if device:
        if actives:
            em.line("return " + ", ".join(em.d(a, 0) for a in actives) + ("," if len(actives) == 1 else ""))
    elif actives or em.uniform:
        emit_reduce.active_reduction(em, actives, emit_uniform.slot_targets(em), values)
