"""Emitting loops: the plain loop (forward kernels, primal replays), the taped forward sweep of a
reverse kernel, and the reverse loop that restores each iteration from the tape, replays the body
without its stores and runs the body's adjoint. Functions over the emit state (emit_state.py).
"""
from __future__ import annotations

from . import emit_parallel, emit_primal, emit_reverse
from .emit_state import EmitState
from .ir import Alloc, Assign, Atomic, If, Loop, Store, walk
from .syntax import atom
from .types import is_float


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


def tape_name(em: EmitState, name: str) -> str:
    return f"_tape_{name.lstrip('_')}"


def taped(em: EmitState, s: Loop) -> list[str]:
    """Values the reverse sweep restores per iteration: the registers and the taped loads."""
    return [r for r, _ in s.carried] + sorted(s.taped_loads)


def tape_declarations(em: EmitState, stmts):
    for s in walk(stmts):
        if isinstance(s, Loop):
            for name in taped(em, s):
                t = em.ir.types.get(name, "int64")
                dtype = t if is_float(t) else "int64"
                em.line(f"{tape_name(em, name)} = cuda.local.array({em.tape_size}, {dtype})")


def loop_sweep(em: EmitState, s: Loop, stores: bool):
    """The loop run forward in a reverse kernel, recording each iteration on the tape."""
    n = f"_n{s.id}"
    em.line(f"{n} = 0")
    loop_head(em, s)
    em.depth += 1
    if s.kind == "while":
        replay_block(em, s.header, None, stores, record=n, loop=s)
        em.line(f"if not {atom(s.cond)}:")
        em.line("    break")
    em.line(f"if {n} < {em.tape_size}:")
    em.depth += 1
    for name in [r for r, _ in s.carried]:
        em.line(f"{tape_name(em, name)}[{n}] = {name}")
    em.line("pass")
    em.depth -= 1
    em.line("else:")
    em.line(f"    {em.prefix}tape_overflow[0] = {s.line}")
    replay_block(em, s.body, None, stores, record=n, loop=s)
    carry_moves(em, s, tangents=False)
    em.line(f"{n} += 1")
    em.depth -= 1


def replay_block(em: EmitState, stmts, tape_index, stores: bool, record: str | None = None, loop: Loop | None = None):
    """Primal statements. With tape_index, taped loads come from the tape instead of memory;
    with record, taped loads are also written to it; stores only when `stores`."""
    for s in stmts:
        if isinstance(s, Loop):
            loop_sweep(em, s, stores)
        elif isinstance(s, If):
            emit_primal.emit_if(em, s, lambda: (replay_block(em, s.body, tape_index, stores, record, loop),
                                                emit_reverse.primal_phis(em, s.phis, 1)),
                                lambda: (replay_block(em, s.orelse, tape_index, stores, record, loop),
                                         emit_reverse.primal_phis(em, s.phis, 2)))
        elif isinstance(s, Atomic) and s.target in em.taped_loads and tape_index is not None:
            em.line(f"{s.target} = {tape_name(em, s.target)}[{tape_index}]")   # its old value
        elif isinstance(s, (Store, Atomic)):
            if stores:
                emit_primal.primal(em, s)
            if stores and record and isinstance(s, Atomic) and s.target in loop.taped_loads:
                em.line(f"if {record} < {em.tape_size}:")
                em.line(f"    {tape_name(em, s.target)}[{record}] = {s.target}")
        elif isinstance(s, Alloc):
            emit_primal.primal(em, s)
            emit_parallel.shadow_alloc(em, s, zero=True)
        elif isinstance(s, Assign) and tape_index is not None and s.target in em.taped_loads:
            em.line(f"{s.target} = {tape_name(em, s.target)}[{tape_index}]")
        else:
            emit_primal.primal(em, s)
            if record and isinstance(s, Assign) and loop is not None and s.target in loop.taped_loads:
                em.line(f"if {record} < {em.tape_size}:")
                em.line(f"    {tape_name(em, s.target)}[{record}] = {s.target}")


def reverse_loop(em: EmitState, s: Loop):
    n, r = f"_n{s.id}", f"_r{s.id}"
    em.line(f"for {r} in range(min({n}, {em.tape_size}) - 1, -1, -1):" + em.comment_line(s.line))
    em.depth += 1
    if s.kind == "for":
        em.line(f"{s.var} = {atom(s.start)} + {r} * {s.step}")
    tape = em.emitters["tape-index"](em, s)
    for name in [reg for reg, _ in s.carried]:
        em.line(f"{name} = {tape_name(em, name)}[{tape}]")
    em.emitters["replay-iteration"](em, s, tape)
    carried = {reg for reg, _ in s.carried}
    local = sorted(v for v in em.varied if v in assigned_in(em, s) and v not in carried)
    for name in local:                     # body values are fresh every iteration
        for j in em.lanes():
            em.line(f"{em.d(name, j)} = {em.ftype(name)}(0.0)")
    pairs = [(reg, nxt) for reg, nxt in s.carried if reg in em.varied]
    for j in em.lanes():
        for k, (reg, _) in enumerate(pairs):
            em.line(f"_c{k} = {em.d(reg, j)}")
            em.line(f"{em.d(reg, j)} = {em.ftype(reg)}(0.0)")
        for k, (reg, nxt) in enumerate(pairs):
            if em.is_varied(nxt):
                em.line(f"{em.d(nxt, j)} += _c{k}")
    emit_reverse.reverse(em, s.body)
    emit_reverse.reverse(em, s.header)
    em.line("pass")
    em.depth -= 1


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
