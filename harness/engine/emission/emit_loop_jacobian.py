"""The Jacobian form of a dynamic loop's reverse (local mixed mode). Functions over the emit state
(emit_state.py), called from emit_loops.py where a loop is swept forward and where its adjoint goes;
the loops it runs as written come from emit_plain_loops.py.

A loop that only computes registers maps its k varied live-ins (values it reads but does not
compute, its carried registers' entry values among them) to its m varied carried registers. The
forward sweep runs the loop once in forward mode with k tangents per varied value, direction j
seeded with the identity on live-in j, so that after the loop the registers' tangents are the
m x k Jacobian J. At the loop's place in the reverse sweep, adj(in_j) += sum_i adj(out_i) J[i][j],
and the loop's adjoint is done: O(n k) arithmetic, no tape, no replayed iteration, no iteration
limit. The tangents are the forward mode's own (emit_forward.forward on a view of the emit state
whose batch lanes are the k directions), so no derivative code is written here.
"""
from __future__ import annotations

import dataclasses

from harness.engine.emission import emit_forward, emit_plain_loops
from harness.engine.analyses.activity import referenced_names
from harness.engine.emission.emit_state import EmitState
from harness.engine.ir.ssa import Assign, Load, Loop, Prim, walk


def chosen(em: EmitState, s: Loop) -> bool:
    """Whether the loop's reverse goes through its Jacobian: the loop only computes registers
    (emit_plain_loops.register_only), reads no array with a shadow (a load of an active array is a
    live-in per element; such loops keep the recomputed or taped form), and k * m is within the
    engine option loop_jacobian_limit (each direction costs a tangent per varied value)."""
    if em.options.loop_jacobian_limit <= 0 or not emit_plain_loops.register_only(em, s):
        return False
    if any(isinstance(t, Assign) and isinstance(t.expr, Load) and t.target in em.varied
           for t in walk(list(s.header) + list(s.body))):
        return False
    return len(live_ins(em, s)) * len(outputs(em, s)) <= em.options.loop_jacobian_limit


def outputs(em: EmitState, s: Loop) -> list[str]:
    """The varied carried registers: after the loop they hold its results."""
    return [reg for reg, _ in s.carried if reg in em.varied]


def live_ins(em: EmitState, s: Loop) -> list[str]:
    """The varied values the loop reads but does not compute: its registers whose entry value is
    varied (a register starting from a constant, `acc = 0.0`, has no entry adjoint to deliver),
    then the other values (`t` in `acc = acc * t + c[k]`)."""
    inside = emit_plain_loops.assigned_in(em, s)
    regs = emit_plain_loops.registers(s)
    entry = entry_values(em)
    first = [r for r in outputs(em, s) if em.is_varied(entry.get(r))]
    rest = sorted(v for v in referenced_names(s) if v in em.varied and v not in inside and v not in regs)
    return first + rest


def entry_values(em: EmitState) -> dict:
    """Register -> the value its copy before the loop reads (lower_loops.loop writes the copy)."""
    out = {}
    for t in walk(em.ir.body):
        if isinstance(t, Loop):
            for reg in emit_plain_loops.registers(t):
                out[reg] = None
    for t in walk(em.ir.body):
        if isinstance(t, Assign) and t.target in out and isinstance(t.expr, Prim) and t.expr.op == "copy":
            out[t.target] = t.expr.args[0]
    return out


def own_prefix(em: EmitState, tag: str) -> str:
    """em.prefix + tag, lengthened until no name of the kernel starts with the tag: then no shadow
    (em.prefix + a kernel name) and no other generated name starts with the result."""
    taken = set(em.ir.types) | {p.name for p in em.ir.params}
    while any(n.startswith(tag) for n in taken):
        tag = tag[0] + tag
    return em.prefix + tag


def tangent_state(em: EmitState, s: Loop) -> EmitState:
    """A view of the emit state writing into the same lines whose batch lanes are the loop's k
    directions and whose shadow names are the Jacobian's (`d_J1_acc`: d acc / d the live-in)."""
    k = max(len(live_ins(em, s)), 1)
    view = dataclasses.replace(em, prefix=own_prefix(em, f"J{s.id}_"), sig=dataclasses.replace(em.sig, width=k))
    view.depth = em.depth
    return view


def forward_sweep(em: EmitState, s: Loop):
    """The loop in the forward sweep: its primal with k tangents per varied value."""
    ins, outs = live_ins(em, s), outputs(em, s)
    if not ins or not outs:               # nothing flows through the loop: the primal alone
        emit_plain_loops.plain_loop(em, s, emit_plain_loops.rerun_block, tangents=False)
        return
    jm = tangent_state(em, s)
    em.line(f"# loop at line {s.line} in forward mode, direction j seeding live-in j of ({', '.join(ins)}): "
            f"after it {jm.prefix}<register>{'_j' if len(ins) > 1 else ''} = d register / d live-in j")
    seeded = ins + [r for r in outs if r not in ins]       # a register from a constant starts at 0
    for v in seeded:
        for j in jm.lanes():
            em.line(f"{jm.d(v, j)} = {em.ftype(v)}({1.0 if j < len(ins) and ins[j] == v else 0.0})")
    emit_plain_loops.plain_loop(jm, s, emit_forward.forward, tangents=True)


def adjoint(em: EmitState, s: Loop, through_jacobian: bool = True):
    """The loop's adjoint: the results' adjoints times J, into the live-ins' adjoints (the
    'loop-jacobian' emitter; `through_jacobian=False` is the mutation self-test's planted bug)."""
    ins, outs = live_ins(em, s), outputs(em, s)
    if not outs:
        return
    jm = tangent_state(em, s)
    a = own_prefix(em, f"A{s.id}_")          # the results' adjoints, kept while the entry values' start
    em.line(f"# loop at line {s.line}: adjoints through its Jacobian (from the forward sweep)")
    for lane in em.lanes():
        for i, r in enumerate(outs):
            em.line(f"{a}{i} = {em.d(r, lane)}")
            em.line(f"{em.d(r, lane)} = {em.ftype(r)}(0.0)")
        for j, v in enumerate(ins):
            em.line(f"{em.d(v, lane)} += " + " + ".join(f"{a}{i} * {jm.d(r, j)}" if through_jacobian else f"{a}{i}"
                                                      for i, r in enumerate(outs)))
