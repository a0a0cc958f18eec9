"""Which adjoints the reverse kernel may gather instead of scattering.

A stencil `out[l] = w0 x[l-d] + w1 x[l] + w2 x[l+d]` scatters its adjoint into dx with one
atomic per read. Where it is proven safe, thread j instead computes dx[j] itself: for each read
site s at offset o_s, thread i = j - o_s (if it exists and its path reads site s) contributes the
partial of its outputs with respect to that read times its cotangents. Thread j recomputes
thread i's forward (replay) to know its path and its primal values; NVVM drops what a linear
stencil does not need. emit_gather.py writes the code; this module only proves eligibility.

Eligible (anything else keeps the scatter, which is always correct):
- a 1-D launch; the thread index comes from `cuda.grid`, threadIdx or blockIdx (not laneid);
- no dynamic loops, barriers, atomics, shuffles, shared or local arrays, device-side autodiff:
  what thread j cannot replay for thread i;
- no array is both read and written (a replay must see the values thread i saw);
- every store to a differentiable array is to an element the thread owns, each element stored
  at most once per thread (its cotangent is read once, by every replay, and consumed afterwards);
- the gathered array is differentiable, 1-D, never written, not owned (owned adjoints need no
  atomics already), and read only at `gx + o`, o an integer literal or a uniform expression of
  integer scalar arguments and launch sizes (`l - d`, `l + 2`, `l + x.shape[0] - 1`).
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.engine.analyses.activity import SHUFFLES
from harness.engine.ir.ssa import Alloc, Assign, Atomic, Barrier, If, KernelIR, Load, Loop, Nested, Prim, Special, Store, walk
from harness.engine.analyses.ownership import THREAD_SYMBOLS, LaunchShape, affine_forms

# uniform over the launch: may appear in an offset, and be evaluated by another thread
_UNIFORM_SPECIALS = ("gsize", "bdim", "gdim", "shape", "size")
# thread indices another thread can compute in a 1-D launch (emit_gather.replay_ir); laneid is not
_THREAD_INDICES = ("grid.0", "grid.1", "grid.2", "tid.x", "tid.y", "tid.z", "bid.x", "bid.y", "bid.z")


@dataclass(frozen=True)
class ReadGroup:
    """The reads of a gathered array at one offset form: thread i reads element i + offset."""
    offset: tuple                   # sorted (symbol, coefficient) pairs, '1' the constant term
    sites: tuple                    # the Assign(Load) statements (several: duplicate offsets)


def gathered_arrays(ir: KernelIR, activity: dict, diff_arrays: set, owned, launch: LaunchShape) -> dict:
    """array -> tuple of ReadGroups, for the arrays whose adjoint the reverse kernel gathers;
    empty when the kernel is not replayable for another thread."""
    if launch.dims != (0,) or ir.local_arrays or not _replayable(ir):
        return {}
    loads = [s for s in walk(ir.body) if isinstance(s, Assign) and isinstance(s.expr, Load)]
    stores = [s for s in walk(ir.body) if isinstance(s, Store)]
    if {s.expr.array for s in loads} & {s.array for s in stores}:
        return {}
    forms = affine_forms(ir)

    def form(a):
        if isinstance(a, str):
            return forms.get(a)
        return {"1": int(a.value)} if isinstance(a.value, int) and not isinstance(a.value, bool) else None

    def stored(stmts) -> set | None:
        """The (array, index form) elements some path through stmts stores; None when a path
        stores one twice or a store is not to an owned element."""
        acc = set()
        for s in stmts:
            if isinstance(s, If):
                body, orelse = stored(s.body), stored(s.orelse)
                if body is None or orelse is None or (body | orelse) & acc:
                    return None
                acc |= body | orelse          # the two branches exclude each other
            elif isinstance(s, Store) and s.array in diff_arrays:
                key = (s.array, tuple(tuple(sorted(f.items())) if f else None for f in map(form, s.index)))
                if s.array not in owned or None in key[1] or key in acc:
                    return None
                acc.add(key)
        return acc

    if stored(ir.body) is None:
        return {}
    scalar_ints = {p.name for p in ir.params if p.kind == "scalar" and "int" in p.dtype}
    out = {}
    for array in sorted({s.expr.array for s in loads}):
        p = ir.param(array)
        if array not in diff_arrays or array in owned or p is None or p.kind != "array" or p.ndim != 1:
            continue
        groups: dict[tuple, list] = {}
        for s in loads:
            if s.expr.array != array:
                continue
            offset = _offset(form(s.expr.index[0]), scalar_ints)
            if offset is None:
                groups = {}
                break
            groups.setdefault(offset, []).append(s)
        if groups:
            out[array] = tuple(ReadGroup(o, tuple(sites)) for o, sites in groups.items())
    return out


def _offset(f: dict | None, scalar_ints: set) -> tuple | None:
    """The offset of an index form gx + o, or None when the form is not that."""
    if f is None or f.get("gx") != 1:
        return None
    rest = {k: v for k, v in f.items() if k != "gx"}
    for sym in rest:
        if sym == "1" or sym in scalar_ints:
            continue
        if any(part in THREAD_SYMBOLS or part.partition(".")[0] not in _UNIFORM_SPECIALS
               for part in sym.split("*")):
            return None
    return tuple(sorted(rest.items()))


def _replayable(ir: KernelIR) -> bool:
    """Whether thread j can recompute thread i's forward: only `cuda.grid(1)` depends on the thread."""
    for s in walk(ir.body):
        if isinstance(s, (Loop, Alloc, Barrier, Atomic, Nested)):
            return False
        if isinstance(s, Assign):
            e = s.expr
            if isinstance(e, Special) and e.name not in _THREAD_INDICES \
                    and e.name.partition(".")[0] not in _UNIFORM_SPECIALS:
                return False
            if isinstance(e, Prim) and e.op in SHUFFLES:
                return False
    return True


def offset_text(offset: tuple, negate: bool = False) -> str:
    """`offset` as source text (scalar arguments and launch sizes by name), e.g. `- d + 1`; empty
    for no offset."""
    from harness.engine.emission.syntax import expr_text
    terms = []
    for sym, c in offset:
        c = -c if negate else c
        if sym == "1":
            terms.append((c, None))
            continue
        name = " * ".join(p if "." not in p else expr_text(Special(p)) for p in sym.split("*"))
        terms.append((c, name))
    text = ""
    for c, name in terms:
        sign = "-" if c < 0 else "+"
        mag = abs(c)
        body = str(mag) if name is None else (name if mag == 1 else f"{mag} * {name}")
        text += f" {sign} {body}"
    return text.strip()
