"""Loops emitted as written, with no tape: the plain loop (forward kernels, primal replays, a
recomputed loop's replayed iterations, the Jacobian form's forward sweep) and the questions about a
loop that decide whether running it again is safe. Functions over the emit state (emit_state.py);
emit_loops.py and emit_loop_jacobian.py both build on them.
"""
from __future__ import annotations

from harness.engine.analyses.activity import SHUFFLES
from harness.engine.emission.emit_primal import emit_if, primal, primal_phis
from harness.engine.emission.emit_state import EmitState
from harness.engine.ir.ssa import Alloc, Assign, Atomic, Barrier, If, Load, Loop, Nested, Prim, Store, walk
from harness.engine.emission.syntax import atom


def loop_head(em: EmitState, s: Loop):
    if s.kind == "for":
        em.line(f"for {s.var} in range({atom(s.start)}, {atom(s.stop)}, {s.step}):" + em.comment_line(s.line))
    else:
        em.line("while True:" + em.comment_line(s.line))


def plain_loop(em: EmitState, s: Loop, emit_block, tangents: bool):
    """The loop as written (no tape): header, exit test, body, then the carried registers."""
    loop_head(em, s)
    em.depth += 1
    if s.kind == "while":
        emit_block(em, s.header)
        em.line(f"if not {atom(s.cond)}:")
        em.line("    break")
    emit_block(em, s.body)
    carry_moves(em, s, tangents=tangents)
    em.depth -= 1


def carry_moves(em: EmitState, s: Loop, tangents: bool):
    """Registers take their end-of-body values all at once (a swap must not see itself)."""
    if not s.carried:
        return
    regs = ", ".join(r for r, _ in s.carried)
    vals = ", ".join(atom(v) for _, v in s.carried)
    em.line(f"{regs} = {vals}")
    if tangents:
        pairs = [(r, v) for r, v in s.carried if r in em.varied]
        for j in em.lanes():
            if pairs:
                lhs = ", ".join(em.d(r, j) for r, _ in pairs)
                rhs = ", ".join(em.d(v, j) if em.is_varied(v) else f"{em.ftype(r)}(0.0)" for r, v in pairs)
                em.line(f"{lhs} = {rhs}")


def rerun_block(em: EmitState, stmts):
    """A recomputed loop's statements as plain register code (`recomputes` admits nothing else);
    a nested loop runs as written, it needs no tape here."""
    for t in stmts:
        if isinstance(t, Loop):
            plain_loop(em, t, rerun_block, tangents=False)
        elif isinstance(t, If):
            emit_if(em, t, lambda: (rerun_block(em, t.body), primal_phis(em, t.phis, 1)),
                    lambda: (rerun_block(em, t.orelse), primal_phis(em, t.phis, 2)))
        else:
            primal(em, t)


def registers(s: Loop) -> list[str]:
    return [r for r, _ in s.carried]


def register_only(em: EmitState, s: Loop) -> bool:
    """Whether the loop only computes registers, so that running it again (a replay, or its
    Jacobian's forward mode) sees what the forward sweep saw: no stores or atomics (a replay
    skips them), no loads of an array the kernel writes (memory holds its final values by then),
    no barriers, no shuffles (the other lanes would have to replay in step), no allocations or
    device-side autodiff. Nested loops count with their bodies."""
    written = {t.array for t in walk(em.ir.body) if isinstance(t, (Store, Atomic))}
    for t in walk(list(s.header) + list(s.body)):
        if isinstance(t, (Store, Atomic, Barrier, Alloc, Nested)):
            return False
        if isinstance(t, Assign) and isinstance(t.expr, Load) and t.expr.array in written:
            return False
        if isinstance(t, Assign) and isinstance(t.expr, Prim) and t.expr.op in SHUFFLES:
            return False
    return True


def assigned_in(em: EmitState, s: Loop) -> set[str]:
    out = set()
    for t in walk(list(s.header) + list(s.body)):
        if isinstance(t, Assign):
            out.add(t.target)
        elif isinstance(t, If):
            out |= {p[0] for p in t.phis}
        elif isinstance(t, Loop):
            out |= {reg for reg, _ in t.carried}
    return out
