"""Emitting gathered adjoints (gather.py proves which arrays): thread j computes dx[j] as the sum
of its readers' contributions instead of every reader scattering into dx with an atomic.

The reverse kernel of `conv3` then reads, for x[j]:
    _gr = conv3__reverse_gather_x(j, ...)     # before any store, so its loads are not held back
    _gx_x_0 = d_x[j] + _gr
    ... the thread's own forward and reverse sweeps, x's adjoint left out ...
    d_x[j] = _gx_x_0
and the module holds, as device functions NVVM inlines:
- `<kernel>_read_<x>(i, k, ...)`: thread i's forward replayed (no stores), then its reverse sweep
  with only the reads of x at offset group k contributing (into a register it returns; k is a
  constant at each call, so NVVM keeps one group's code per inlined call, and numba compiles the
  replay once per array, not once per offset). The stored elements' cotangents are read, not
  consumed: other threads read them too.
- `<kernel>_gather_<x>(j, ...)`: for each offset group, the reader i = j - offset if it exists
  (0 <= i < threads); a second candidate i - len(x) covers a read at a negative index, which
  wraps around to j.
Elements beyond the thread count are gathered in a grid-stride loop at the end.

Consume-the-cotangent: the reverse zeroes dout[i] after using it, but thread j reads dout[j - o]
that thread j - o would zero (a race). So no store's cotangent is consumed in the reverse kernel;
a second kernel, `<kernel>_consume` (same grid and parameters), replays each thread's control
flow and zeroes the cotangent of every element it stored: the kernel boundary orders every read
before the zeroing (engine.md, Semantics). The thread's own adjoint work (the weights' uniform
slots, Active scalars, other arrays) stays in the thread, counted once.
"""
from __future__ import annotations

import dataclasses
import functools

from harness.engine.analyses.activity import DIFFERENTIABLE
from harness.engine.emission.emit_state import EmitState, body_text
from harness.engine.ir.ssa import Assign, If, KernelIR, Lit, Prim, Special, Store, walk
from harness.engine.emission.syntax import atom, index_text


def base_name(ir: KernelIR) -> str:
    """A prefix for the gather's own names that no name of the kernel starts with."""
    taken = set(ir.types) | {p.name for p in ir.params}
    base = "_g"
    while any(n.startswith(base) for n in taken):
        base = "_" + base
    return base


def data_params(em: EmitState) -> list[str]:
    """The kernel's arguments and their shadows (the device functions' parameters after the index)."""
    out = []
    for p in em.ir.params:
        out.append(p.name)
        if p.kind == "array" and em.sig.activity[p.name] in DIFFERENTIABLE:
            out += [em.d(p.name, j) for j in em.lanes()]
    return out


def own_emitters(em: EmitState) -> dict:
    """The thread's own reverse sweep: gathered reads add nothing (their readers' neighbours gather
    them), and stores read their cotangent without consuming it (the consume kernel zeroes it)."""
    base, gathered = em.emitters, em.sig.gather

    def load(em: EmitState, s: Assign):
        if s.expr.array in gathered:
            em.line(f"pass  # {s.expr.array}[{index_text(s.expr.index)}] (line {s.line}): adjoint gathered by "
                    "the element's thread")       # a statement: it may be all a branch holds
        else:
            base["load"](em, s)

    return {**base, "load": load, "store": functools.partial(base["store"], consume=False)}


def _acc(em: EmitState, array: str, lane: int) -> str:
    return f"{base_name(em.ir)}x_{array}_{lane}"


def _call(em: EmitState, fname: str, array: str, index: str) -> str:
    return f"{fname}_gather_{array}({index}, {', '.join(data_params(em))})"


def _targets(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names)


def kernel_start(em: EmitState, fname: str):
    """Gather each gathered array's element j = cuda.grid(1) first, with the shadow's old value:
    loads before any store (a load after a store waits for it: emit_prefetch.py). Only thread j
    touches d_x[j] in this kernel, so the sum is written back with a plain store at the end."""
    g = base_name(em.ir)
    em.line(f"# gathered adjoints ({', '.join(em.sig.gather)}): element j's readers are replayed by thread j"
            " (no atomics); stored cotangents are zeroed by the consume kernel")
    em.line(f"{g}j = cuda.grid(1)")
    for array in em.sig.gather:
        accs = [_acc(em, array, j) for j in em.lanes()]
        for a in accs:
            em.line(f"{a} = {em.ftype(array)}(0.0)")
        em.line(f"if {g}j < {array}.shape[0]:")
        _sum_into(em, fname, array, accs, g + "j", "=")


def _sum_into(em: EmitState, fname: str, array: str, accs: list[str], index: str, how: str):
    """accs = shadow[index] + the gathered sum ('='), or shadow[index] += the gathered sum ('+=')."""
    g = base_name(em.ir)
    em.line(f"    {g}r_{array} = {_call(em, fname, array, index)}")
    for j, a in enumerate(accs):
        part = f"{g}r_{array}" if len(accs) == 1 else f"{g}r_{array}[{j}]"
        em.line(f"    {a} = {em.d(array, j)}[{index}] + {part}" if how == "=" else
                f"    {em.d(array, j)}[{index}] += {part}")


def kernel_end(em: EmitState, fname: str):
    """Store the gathered sums; elements beyond the thread count in a grid-stride loop."""
    g = base_name(em.ir)
    for array in em.sig.gather:
        accs = [_acc(em, array, j) for j in em.lanes()]
        em.line(f"if {g}j < {array}.shape[0]:")
        for j, a in enumerate(accs):
            em.line(f"    {em.d(array, j)}[{g}j] = {a}")
        em.line(f"for {g}e in range({g}j + cuda.gridsize(1), {array}.shape[0], cuda.gridsize(1)):"
                "   # more elements than threads")
        _sum_into(em, fname, array, accs, g + "e", "+=")


def helpers_text(em: EmitState, fname: str, params: list[str]) -> str:
    """The device functions of every gathered array and the consume kernel, as module text."""
    parts = []
    for array, groups in em.sig.gather.items():
        parts.append(_gather_function(em, fname, array, groups))
        parts.append(_reader_function(em, fname, array, groups))
    parts.append(_consume_kernel(em, f"{fname}_consume", params))
    return "\n\n".join(parts)


def _gather_function(em: EmitState, fname: str, array: str, groups) -> str:
    from harness.engine.analyses.gather import offset_text
    g = base_name(em.ir)
    ft = em.ftype(array)
    sums = [f"{g}s_{j}" for j in em.lanes()]
    lines = ["@cuda.jit(device=True)",
             f"def {fname}_gather_{array}({g}j, {', '.join(data_params(em))}):",
             f"    # the adjoint of {array}[{g}j]: the sum over the threads i that read it, each replayed here;",
             f"    # thread i exists if 0 <= i < cuda.gridsize(1); {g}w = 1: a read at a negative index wraps around",
             f"    {g}T = cuda.gridsize(1)",
             f"    {g}n = {array}.shape[0]"]
    lines += [f"    {s} = {ft}(0.0)" for s in sums]
    lines.append(f"    for {g}w in range(2):")
    for k, group in enumerate(groups):
        reader = " ".join(filter(None, (f"{g}j", offset_text(group.offset, negate=True), f"- {g}w * {g}n")))
        lines.append(f"        {g}i = {reader}"
                     + f"   # reads {_read(array, group)} (line {', '.join(str(s.line) for s in group.sites)})")
        lines.append(f"        if {g}i >= 0 and {g}i < {g}T:")
        call = f"{fname}_read_{array}({g}i, {k}, {', '.join(data_params(em))})"
        if len(sums) == 1:
            lines.append(f"            {sums[0]} += {call}")
        else:
            lines.append(f"            {g}r = {call}")
            lines += [f"            {s} += {g}r[{j}]" for j, s in enumerate(sums)]
    lines.append(f"    return {_targets(sums)}")
    return "\n".join(lines) + "\n"


def _read(array: str, group) -> str:
    from harness.engine.analyses.gather import offset_text
    return f"{array}[{f'i {offset_text(group.offset)}'.strip()}]"


# Thread indices as thread `i` of a 1-D launch sees them (y and z are 0 for every thread there).
_THREAD_INDEX = {"grid.0": None, "tid.x": "mod", "bid.x": "floordiv",
                 "tid.y": 0, "tid.z": 0, "bid.y": 0, "bid.z": 0, "grid.1": 0, "grid.2": 0}


def replay_ir(ir: KernelIR, thread: str) -> KernelIR:
    """`ir` as thread `thread` of a 1-D launch runs it: `cuda.grid(1)` becomes that index, threadIdx.x
    and blockIdx.x its remainder and quotient by blockDim.x (other statements shared)."""
    types = {**ir.types, thread: "int64"}

    def visit(stmts):
        out = []
        for s in stmts:
            how = _THREAD_INDEX.get(s.expr.name, "keep") if isinstance(s, Assign) and isinstance(s.expr, Special) \
                else "keep"
            if how is None:
                s = Assign(s.target, Prim("copy", (thread,)), s.line)
            elif how in ("mod", "floordiv"):
                block = f"{thread}_b{len(types)}"         # no kernel name starts like the thread's
                types[block] = "int64"
                out.append(Assign(block, Special("bdim.x"), s.line))
                s = Assign(s.target, Prim(how, (thread, block)), s.line)
            elif how == 0:
                s = Assign(s.target, Prim("copy", (Lit(0),)), s.line)
            elif isinstance(s, If):
                s = dataclasses.replace(s, body=visit(s.body), orelse=visit(s.orelse))
            out.append(s)
        return out
    return dataclasses.replace(ir, body=visit(ir.body), types=types)


def _sub_state(em: EmitState, ir: KernelIR, emitters: dict) -> EmitState:
    arrays = frozenset(p.name for p in ir.params if p.kind == "array")
    sig = dataclasses.replace(em.sig, skip_store=arrays, gather={})
    sub = EmitState.start(ir, sig, em.varied, emitters, em.rules)
    sub.prefix = em.prefix
    return sub


def _reader_function(em: EmitState, fname: str, array: str, groups) -> str:
    from harness.engine.emission import emit_reverse
    g = base_name(em.ir)
    group_of = {id(s): k for k, group in enumerate(groups) for s in group.sites}
    accs = [f"{g}a_{j}" for j in em.lanes()]

    def load(sub: EmitState, s: Assign):
        if id(s) in group_of:
            sub.line(f"if {g}k == {group_of[id(s)]}:   # {_read(array, groups[group_of[id(s)]])}, line {s.line}")
            for j in sub.lanes():
                sub.line(f"    {accs[j]} += {sub.d(s.target, j)}")

    emitters = {**em.emitters, "load": load, "store": functools.partial(em.emitters["store"], consume=False)}
    sub = _sub_state(em, replay_ir(em.ir, f"{g}i"), emitters)
    sub.line(f"# thread {g}i replayed (no stores), then its reverse sweep: what its reads of {array} in "
             f"offset group {g}k contribute")
    emit_reverse.reverse_replay(sub, sub.ir.body)
    emit_reverse.adjoint_inits(sub)
    for a in accs:
        sub.line(f"{a} = {em.ftype(array)}(0.0)")
    emit_reverse.reverse(sub, sub.ir.body)
    sub.line(f"return {_targets(accs)}")
    return (f"@cuda.jit(device=True)\ndef {fname}_read_{array}({g}i, {g}k, {', '.join(data_params(em))}):\n"
            + body_text(sub.lines) + "\n")


def _control_slice(ir: KernelIR, diff_arrays: set) -> set[str]:
    """The values the consume kernel needs: branch conditions and stored indices, and what they
    are computed from (the rest of the forward is left out, so numba compiles less)."""
    defs = {s.target: s.expr for s in walk(ir.body) if isinstance(s, Assign)}
    phis = {t: (a, b) for s in walk(ir.body) if isinstance(s, If) for t, a, b in s.phis}
    work = [s.cond for s in walk(ir.body) if isinstance(s, If)]
    work += [a for s in walk(ir.body) if isinstance(s, Store) and s.array in diff_arrays for a in s.index]
    needed: set[str] = set()
    while work:
        a = work.pop()
        if not isinstance(a, str) or a in needed:
            continue
        needed.add(a)
        e = defs.get(a)
        work += list(getattr(e, "args", ()) or ()) + list(getattr(e, "index", ()) or ()) + list(phis.get(a, ()))
    return needed


def _consume_kernel(em: EmitState, name: str, params: list[str]) -> str:
    """Each thread's control flow replayed; the cotangent of every element it stored is zeroed."""
    from harness.engine.emission import emit_primal
    sub = _sub_state(em, em.ir, em.emitters)
    needed = _control_slice(em.ir, sub.diff_arrays)

    def phis(s: If, side: int):
        for phi in s.phis:
            if phi[0] in needed:
                sub.line(f"{phi[0]} = {atom(phi[side])}")

    def visit(stmts):
        for s in stmts:
            if isinstance(s, If):
                emit_primal.emit_if(sub, s, lambda s=s: (visit(s.body), phis(s, 1)),
                                    lambda s=s: (visit(s.orelse), phis(s, 2)))
            elif isinstance(s, Store):
                if s.array in sub.diff_arrays:
                    for j in sub.lanes():
                        sub.line(f"{sub.d(s.array, j)}[{index_text(s.index)}] = 0" + sub.comment_line(s.line))
            elif isinstance(s, Assign) and s.target in needed:
                emit_primal.primal(sub, s)
    sub.line("# the cotangents of the elements each thread stored, consumed (zeroed) once every "
             "reader has gathered them")
    visit(sub.ir.body)
    return f"def {name}({', '.join(params)}):\n" + body_text(sub.lines) + "\n"
