"""The values a dynamic loop's reverse sweep reads from its replay of an iteration.

The reverse sweep of a taped loop replays each iteration (emit_loops.replay_block) so that the
iteration's adjoints find its values in registers. Most adjoints read few of them: the adjoint of
`a + b` reads neither operand, that of `a * b` reads both, that of a load only its index. A
value no adjoint reads, and no value such an adjoint reads is computed from, need not be replayed,
and a load of a written array that is not needed need not be taped: in a shared-memory tree
reduction (`sh[t] += sh[t + stride]`) the tape would hold two floats per level that the linear
adjoint never reads, written and read in local memory by every thread.

`needed(em)` is the set of SSA names the reverse sweep may read from a replay: the names each
adjoint emitter reads (a primitive's partials as the rules instantiate them, a load's or store's
index, a branch's condition; for any other statement kind, every name it refers to), closed over
the replayed definitions they are computed from. The replay emits an assignment or a phi only for
a needed name, and the forward sweep tapes only needed loads. Everything else the replay runs
keeps its operands: the conditions of its branches, the stores it rebuilds (shared tiles,
shared_replay.py) and the loops nested in the iteration, which are replayed whole. Values in the
value log of nested loops (activity.mark_taped_loads) are all kept: each takes a place in the log
that the replays count.
"""
from __future__ import annotations

import re

from harness.engine.analyses.activity import referenced_names
from harness.engine.emission import emit_extrema
from harness.engine.emission.emit_state import EmitState
from harness.engine.ir.ssa import Alloc, Assign, Atomic, Barrier, If, Loop, Nested, Prim, Store, walk

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def needed(em: EmitState, kind_of, partials_of) -> set[str]:
    """The names a reverse sweep may read from a loop replay (module docstring). `kind_of` is the
    adjoint emitter's statement kind (emit_adjoints.statement_kind), `partials_of` a primitive's
    partials as source text (emit_adjoints.operand_partials)."""
    names = set(em.ir.types) | {p.name for p in em.ir.params}
    roots: set[str] = set()
    defs: dict[str, set[str]] = {}
    for loop in (s for s in walk(em.ir.body) if isinstance(s, Loop)):
        roots |= loop.logged             # the value log's positions count every logged value
        for s in walk(list(loop.header) + list(loop.body)):
            _definitions(s, defs)
            roots |= _adjoint_reads(em, s, kind_of(em, s), names, partials_of)
            roots |= _replay_reads(s, loop)
    out: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        todo.extend(defs.get(name, ()))
    return out


def _definitions(s, defs: dict):
    """Each name a replay defines -> the names its definition reads (a taped load's are unused,
    which only keeps more than needed)."""
    if isinstance(s, Assign):
        defs[s.target] = referenced_names(s.expr)
    elif isinstance(s, If):
        for target, a, b in s.phis:
            defs[target] = {x for x in (a, b) if isinstance(x, str)}


def _adjoint_reads(em: EmitState, s, kind: str | None, names: set[str], partials_of) -> set[str]:
    """The names the adjoint of `s` reads (not those of the statements nested in it, which are
    visited themselves)."""
    if kind is None or kind == "barrier":
        return set()
    if kind == "assign" and isinstance(s.expr, Prim):
        return {n for _, text in partials_of(em, s) for n in _NAME.findall(text) if n in names}
    if kind == "load":
        return {a for a in s.expr.index if isinstance(a, str)}
    if kind == "store":
        return {a for a in s.index if isinstance(a, str)}
    if kind == "if":
        return {s.cond} if isinstance(s.cond, str) else set()
    return referenced_names(s)           # loops, atomics, shuffles, ...: everything they refer to


def _replay_reads(s, loop: Loop) -> set[str]:
    """What the replay itself reads whatever is needed: branch conditions (it replays every
    branch), the operands of the shared-tile stores it rebuilds, and what it replays whole
    (nested loops, device-side autodiff calls)."""
    if isinstance(s, If):
        return {s.cond} if isinstance(s.cond, str) else set()
    if isinstance(s, Store) and s.array in loop.replayed_shared:
        return referenced_names(s)
    if isinstance(s, (Assign, Atomic, Store, Barrier, Alloc)):
        return set()
    return referenced_names(s)           # a nested loop, a device-side autodiff call: replayed whole


def replays(em: EmitState, s) -> bool:
    """Whether the reverse sweep's replay of an iteration emits this assignment (an Assign, or an
    atomic's taped old value). An atomic max/min of a counted kernel always runs in the replay:
    it names its execution and counts it (emit_extrema.py), whether or not its old value is read."""
    return em.replay_needs is None or s.target in em.replay_needs or emit_extrema.is_extremum(em, s)



def replays_name(em: EmitState, name: str) -> bool:
    return em.replay_needs is None or name in em.replay_needs


def barrier_orders_replay(barrier: Barrier, loop: Loop | None, stmts: list) -> bool:
    """Whether the reverse sweep's replay of an iteration keeps this barrier of the loop's body.
    The replay writes shared memory only where it rebuilds a shared tile (shared_replay.py) and
    reads no other shared memory (those reads come from the tape), so a barrier orders something
    only after a rebuilt tile's stores: the top-level barrier that ends the segment holding them.
    The order between the adjoints of different intervals is kept by the mirrored barriers of the
    reverse sweep, which the replay's do not replace. A barrier nested under a branch is kept
    whenever the loop rebuilds a tile."""
    if loop is None:
        return False
    if any(isinstance(t, Nested) for t in walk(list(loop.header) + list(loop.body))):
        return True                      # a device function replayed with the iteration may use it
    if not loop.replayed_shared:
        return False
    if stmts is not loop.body:
        return True
    at = next(k for k, s in enumerate(stmts) if s is barrier)
    start = max((k + 1 for k in range(at) if isinstance(stmts[k], Barrier)), default=0)
    return any(isinstance(t, Store) and t.array in loop.replayed_shared for t in walk(stmts[start:at]))


def unmirrored_barrier(loop: Loop) -> Barrier | None:
    """The barrier that ends a loop's body when its mirror in the reverse sweep orders nothing.

    The reverse sweep of an iteration replays it, then mirrors the body's barriers from the last.
    Where the replay rebuilds shared tiles and keeps the barrier after their stores (the tiled
    matrix product: stores, barrier, reads of the tiles, barrier), the body's last barrier is
    mirrored right after the replay's reads: between the replay's barrier and that mirror this
    thread writes no shared memory and touches no shadow, and after the mirror come only the last
    segment's adjoints, which touch shadows and no primal shared array. The earlier iteration's
    adjoints are ordered before them by the replay's barrier, and the replay's reads before the next
    replay's stores by the mirrors that follow. So that mirror is dropped when: the loop rebuilds
    tiles; the body ends with a block barrier; the top-level barrier before it is one the replay
    keeps; and between the two there is no store, atomic, barrier or device-side autodiff."""
    body = list(loop.body)
    if not loop.replayed_shared or not body or not _block_barrier(body[-1]):
        return None
    if any(isinstance(t, Nested) for t in walk(list(loop.header) + body)):
        return None
    earlier = [k for k in range(len(body) - 1) if isinstance(body[k], Barrier)]
    if not earlier or not _block_barrier(body[earlier[-1]]) or \
            not barrier_orders_replay(body[earlier[-1]], loop, loop.body):
        return None
    if any(isinstance(t, (Store, Atomic, Barrier, Nested)) for t in walk(body[earlier[-1] + 1:-1])):
        return None
    return body[-1]


def _block_barrier(s) -> bool:
    return isinstance(s, Barrier) and not s.warp
