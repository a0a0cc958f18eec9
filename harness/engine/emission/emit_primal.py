"""Emitting the primal statements as written (every mode replays them), `if` blocks with their
phi moves, and the parameter list of a generated function. Functions over the emit state (emit_state.py)."""
from __future__ import annotations

from harness.engine.emission import coarsen, emit_parallel
from harness.engine.analyses.activity import DIFFERENTIABLE
from harness.engine.emission.emit_state import EmitState, extremum_params
from harness.engine.ir.ssa import Alloc, Assign, Atomic, Barrier, Draw, If, Nested, Special, Store
from harness.engine.emission.syntax import atom, expr_text, index_text
from harness.engine.ir.types import is_float


def emit_if(em: EmitState, s: If, then_fn, else_fn):
    """`if cond:` with both branches; an empty else is dropped, an if with nothing in it too."""
    head = len(em.lines)
    em.line(f"if {atom(s.cond)}:" + em.comment_line(s.line))
    em.depth += 1
    then_fn()
    then_empty = len(em.lines) == head + 1
    if then_empty:
        em.line("pass")
    em.depth -= 1
    mark = len(em.lines)
    em.line("else:")
    em.depth += 1
    else_fn()
    em.depth -= 1
    if len(em.lines) == mark + 1:
        del em.lines[mark:]
        if then_empty:
            del em.lines[head:]


def primal_phis(em: EmitState, phis, side: int):
    for phi in phis:
        em.line(f"{phi[0]} = {atom(phi[side])}")
        em.defined.add(phi[0])


def primal(em: EmitState, s):
    if isinstance(s, Alloc):
        em.line(emit_parallel.alloc_text(em, s.array, s.array.name))
        return
    if isinstance(s, Barrier):
        em.barrier(em.comment_line(s.line))
        return
    if isinstance(s, Draw):                  # numba's own generator function, on the same state
        args = [s.array, index_text(s.index)] + ([atom(s.value)] if s.op == "init_xoroshiro128p_state" else [])
        call = f"{s.op}({', '.join(args)})" + em.comment_line(s.line)
        em.line(f"{s.target} = {call}" if s.target else call)
        return
    if isinstance(s, Atomic):
        em.line(f"{s.target} = cuda.atomic.{s.op}({s.array}, {emit_parallel.atomic_index(em, s.index)}, {atom(s.value)})")
        return
    if isinstance(s, Nested):
        call = f"{em.nested_names[id(s)]}({', '.join(nested_args(em, s))})"
        if s.targets:
            # reverse returns a tuple of adjoints; forward returns the result's tangent itself
            tuple_ = s.mode == "reverse" and len(s.targets) == 1
            em.line(f"{', '.join(s.targets)}{',' if tuple_ else ''} = {call}"
                    + em.comment_line(s.line))
        else:
            em.line(call + em.comment_line(s.line))
    elif isinstance(s, Assign):
        text = em.emitters["virtual-index"](s.expr) if em.virtual_blocks and isinstance(s.expr, Special) else expr_text(s.expr)
        em.line(f"{s.target} = {text}")
    elif isinstance(s, Store):
        if s.array not in em.sig.skip_store:
            em.line(f"{s.array}[{index_text(s.index)}] = {atom(s.value)}")


def nested_args(em: EmitState, s) -> list[str]:
    """Arguments of a device-side autodiff call, in the derivative function's order: a reverse
    that tapes a dynamic loop reports a loop outrunning its tape through the kernel's flag."""
    out = []
    for a in s.args:
        out.append(atom(a.value))
        if a.activity.startswith("duplicated") and (a.is_array or s.mode == "forward"):
            out.append(atom(a.shadow))
        elif a.activity == "active" and s.mode == "forward":
            out.append("0.0")
    if id(s) in em.nested_tapes:
        out.append(em.prefix + "tape_overflow")
    return out


def primal_params(em: EmitState) -> list[str]:
    """A primal kernel's parameters: the kernel's own, and the tape-overflow flag when a
    device-side reverse it calls tapes a dynamic loop."""
    return [p.name for p in em.ir.params] + ([em.prefix + "tape_overflow"] if em.nested_tapes else [])


def params(em: EmitState, mode: str) -> list[str]:
    out = []
    for p in em.ir.params:
        out.append(p.name)
        act = em.sig.activity[p.name]
        if p.kind == "array" and act in DIFFERENTIABLE:
            out += [em.d(p.name, j) for j in em.lanes()]
        elif p.kind == "scalar" and act in DIFFERENTIABLE and mode == "forward":
            out += [em.d(p.name, j) for j in em.lanes()]
    if mode == "reverse" and active_scalars(em):
        out.append(em.prefix + "active_out")
    if mode == "reverse" and em.uniform:
        out.append(em.prefix + "uniform_spread")
    if mode == "reverse" and em.has_loops:
        out.append(em.prefix + "tape_overflow")
    if mode in ("forward", "reverse"):
        out += extremum_params(em)
    if mode == "reverse" and em.virtual_blocks:
        out += list(coarsen.GRID_PARAMS)
    return out


def active_scalars(em: EmitState) -> list[str]:
    return [p.name for p in em.ir.params if p.kind == "scalar" and em.sig.activity[p.name] in DIFFERENTIABLE
            and is_float(p.dtype)]
