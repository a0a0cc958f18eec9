"""Analyses over the SSA form: activity (which values carry derivatives) and index ownership
(which array adjoints each thread may update without atomics).
"""
from __future__ import annotations

import dataclasses

from dataclasses import dataclass, field

import numpy as np

from harness.core.errors import ActivityError, UnsupportedError
from harness.engine.ir.ssa import Atomic, Assign, Draw, EXTREMA, If, KernelIR, Load, Loop, Nested, Prim, Store, file_of, walk
from harness.engine.rules.table import NO_RULE_MESSAGE, PARTIALS, PIECEWISE_CONSTANT
from harness.engine.ir.types import is_float
from harness.engine.analyses.shared_replay import replayed_shared

DIFFERENTIABLE = ("duplicated", "duplicated_no_need", "batch_duplicated", "active")
SHUFFLES = ("shfl", "shfl_up", "shfl_down", "shfl_xor")      # args: (mask, value, lane or delta)


# ----------------------------------------------------------------------------- activity

def varied_values(ir: KernelIR, activity: dict[str, str], owned=None) -> set[str]:
    """SSA values that depend on a differentiable input (forward activity analysis). `owned`: a
    function giving the arrays whose elements each thread touches alone (ownership.owned_arrays),
    for the atomic max/min checks.

    Structured ifs need one pass in program order; loops feed their carried registers back, so
    the pass repeats until nothing new becomes varied (the lattice is finite: a few passes).
    """
    varied = {p.name for p in ir.params if p.kind == "scalar" and activity[p.name] in DIFFERENTIABLE
              and is_float(p.dtype)}

    def visit(stmts):
        for s in stmts:
            if isinstance(s, Nested):
                raise UnsupportedError("a kernel that calls autodiff on the device cannot itself be "
                                       "differentiated (higher-order derivatives are not supported)",
                                       file=file_of(ir, s), line=s.line)
            if isinstance(s, Assign):
                if ir.types.get(s.target) == "float16" and isinstance(s.expr, Prim) and \
                        any(isinstance(a, str) and a in varied for a in s.expr.args):
                    raise UnsupportedError(f"cannot differentiate `{s.expr.op}`: {NO_RULE_MESSAGE['cast_float16']}",
                                           file=ir.file, line=s.line)
                if not is_float(ir.types.get(s.target, "int64")) or s.target in ir.nodiff:
                    continue
                e = s.expr
                if isinstance(e, Load):
                    if activity[e.array] in DIFFERENTIABLE:
                        varied.add(s.target)
                elif isinstance(e, Prim) and any(isinstance(a, str) and a in varied for a in e.args):
                    if e.op in PIECEWISE_CONSTANT:
                        continue
                    if e.op == "custom":
                        if any(isinstance(a, str) and a in varied for a in e.args[1:]):
                            varied.add(s.target)
                        continue
                    if e.op in SHUFFLES:
                        if isinstance(e.args[1], str) and e.args[1] in varied:
                            varied.add(s.target)
                        continue
                    if e.op not in PARTIALS:
                        why = NO_RULE_MESSAGE.get(e.op, "no derivative rule is registered for it")
                        raise UnsupportedError(f"cannot differentiate `{e.op}`: {why}", file=file_of(ir, s), line=s.line)
                    varied.add(s.target)
            elif isinstance(s, If):
                visit(s.body)
                visit(s.orelse)
                for target, a, b in s.phis:
                    if is_float(ir.types[target]) and (a in varied or b in varied):
                        varied.add(target)
            elif isinstance(s, Atomic) and activity.get(s.array) in DIFFERENTIABLE:
                if s.op in EXTREMA:
                    check_extremum(ir, s, owned)
            elif isinstance(s, Loop):
                visit(s.header)
                visit(s.body)
                for reg, nxt in s.carried:
                    if is_float(ir.types[reg]) and isinstance(nxt, str) and nxt in varied:
                        varied.add(reg)

    while True:
        before = len(varied)
        visit(ir.body)
        if len(varied) == before:
            break
    _refuse_atomic_results(ir, activity)
    return varied


def _used_atoms(ir: KernelIR, replayed_only: bool = False) -> set[str]:
    """The names some statement reads. `replayed_only`: leave out the values stored to the kernel's
    array arguments, which a reverse sweep's replay of an iteration never stores again."""
    global_arrays = {p.name for p in ir.params if p.kind == "array"} if replayed_only else set()
    used = set()
    for s in walk(ir.body):
        if isinstance(s, Assign):
            e = s.expr
            used |= {a for a in getattr(e, "args", ()) if isinstance(a, str)}
            used |= {a for a in getattr(e, "index", ()) if isinstance(a, str)}
            used |= {a for a in (getattr(e, "partials", None) or ()) if isinstance(a, str)}
        elif isinstance(s, (Store, Atomic)):
            used |= {a for a in s.index if isinstance(a, str)}
            if isinstance(s.value, str) and not (isinstance(s, Store) and s.array in global_arrays):
                used.add(s.value)
        elif isinstance(s, If):
            if isinstance(s.cond, str):
                used.add(s.cond)
            used |= {a for _, x, y in s.phis for a in (x, y) if isinstance(a, str)}
        elif isinstance(s, Loop):
            used |= {a for _, v in s.carried for a in [v] if isinstance(a, str)}
            used |= {a for a in (s.start, s.stop, s.cond) if isinstance(a, str)}
    used |= {a for a in ir.returns if isinstance(a, str)}
    return used


def _refuse_atomic_results(ir: KernelIR, activity) -> None:
    used = _used_atoms(ir)
    for s in walk(ir.body):
        if isinstance(s, Atomic) and activity.get(s.array) in DIFFERENTIABLE and s.target in used:
            raise UnsupportedError(
                f"the value returned by cuda.atomic.{s.op} on differentiable '{s.array}' depends on the order "
                "in which threads arrive; its derivative is refused", file=file_of(ir, s), line=s.line)


def mark_taped_loads(ir: KernelIR) -> None:
    """The reverse sweep replays each loop iteration without its stores, so a value that replay
    cannot recompute goes on the tape, per iteration: a load from an array the kernel also writes
    (the array holds its final values by then) and the old value an atomic returned (the atomic
    is a store, not replayed). Everything else in an iteration is recomputed from the taped
    registers and loads. A shared tile that a block-uniform loop stages and then reads
    (shared_replay.py) is the exception: the replay stores the iteration's tile again, so its
    reads, nested loops included, read shared memory instead of the tape.

    Such a value inside a nested loop is also `logged`: the reverse sweep of an enclosing loop
    replays the inner loop from the enclosing iteration's registers, where the value cannot be
    recomputed either, so the forward sweep appends every occurrence to a per-thread value log
    in execution order and each replay reads it back from the position the enclosing loops
    taped at the start of their iterations (emit_loops.py)."""
    stored = {s.array for s in walk(ir.body) if isinstance(s, (Store, Atomic))}
    used = _used_atoms(ir)
    replay_used = _used_atoms(ir, replayed_only=True)

    def replay_needs_tape(t, replayed) -> bool:
        if isinstance(t, Assign) and isinstance(t.expr, Load) and t.expr.array in stored \
                and t.expr.array not in replayed:
            return True                   # memory holds the array's final values by the replay
        if isinstance(t, Draw):           # stored to global memory only: the replay skips that store
            return t.target in replay_used
        return isinstance(t, Atomic) and t.target in used

    def visit(stmts, enclosing: tuple, replayed):
        for s in stmts:
            if isinstance(s, If):
                visit(s.body, enclosing, replayed)
                visit(s.orelse, enclosing, replayed)
            elif isinstance(s, Loop):
                if not enclosing:
                    s.replayed_shared = replayed_shared(ir, s)
                inner_replayed = replayed | s.replayed_shared
                for t in _own_statements(list(s.header) + list(s.body)):
                    if not replay_needs_tape(t, inner_replayed):
                        continue
                    s.taped_loads.add(t.target)
                    if enclosing:
                        for loop in enclosing + (s,):
                            loop.logged.add(t.target)
                        enclosing[0].log_root = True
                visit(s.body, enclosing + (s,), inner_replayed)

    visit(ir.body, (), frozenset())


def _own_statements(stmts):
    """A loop's statements, through its branches but not into its nested loops."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from _own_statements(s.body)
            yield from _own_statements(s.orelse)


def check_const_arrays(ir: KernelIR, activity: dict[str, str], varied: set[str]) -> None:
    """A Const array that stores a differentiable value and is read back would drop that value's
    derivative silently; refuse it and name the argument instead."""
    stored = {}
    loaded = set()
    for s in walk(ir.body):
        if isinstance(s, Store) and activity[s.array] == "const" and isinstance(s.value, str) \
                and s.value in varied:
            stored.setdefault(s.array, (file_of(ir, s), s.line))
        if isinstance(s, Assign) and isinstance(s.expr, Load):
            loaded.add(s.expr.array)
    for name, (file, line) in stored.items():
        if name in loaded:
            pos = [p.name for p in ir.params].index(name)
            raise ActivityError(
                f"{file}:{line}: argument {pos} ('{name}') is Const but stores a differentiable value "
                f"that the kernel reads back; mark it duplicated so its derivative is carried",
                argument=pos, param=name)


# ----------------------------------------------------------------------------- index ownership


from harness.engine.analyses.ownership import LaunchShape, check_cross_thread_war, check_shared_generator_states, check_stores_every_thread_makes, owned_arrays  # noqa: E402  (index sets)


def check_extremum(ir: KernelIR, atomic: Atomic, owned=None) -> None:
    """An atomic max/min on a differentiable array is differentiated through its winner: the
    contribution that became the final value (on a tie, the lowest thread, then its earliest
    statement; the initial value on a tie with it). Finding the winner takes two passes over the
    grid before the derivative launch, which replay the kernel without its stores; that replay sees
    the same values only when the kernel reads no array it writes. A statement in a dynamic loop
    names each of its executions by its place among the thread's max/min executions
    (emit_extrema.py: counted kernels). Anything else is refused, naming the line."""
    def refuse(why: str):
        raise UnsupportedError(f"cuda.atomic.{atomic.op} on differentiable '{atomic.array}': {why}",
                               file=file_of(ir, atomic), line=atomic.line)
    params = {p.name for p in ir.params if p.kind == "array"}
    loaded = {s.expr.array for s in walk(ir.body) if isinstance(s, Assign) and isinstance(s.expr, Load)}
    stored = {s.array for s in walk(ir.body) if isinstance(s, Store)}
    atomics = {s.array for s in walk(ir.body) if isinstance(s, Atomic)}
    if atomic.array in loaded or atomic.array in stored:
        other = next(s for s in walk(ir.body) if (isinstance(s, Assign) and isinstance(s.expr, Load)
                                                  and s.expr.array == atomic.array)
                     or (isinstance(s, Store) and s.array == atomic.array))
        verb = "stores" if isinstance(other, Store) else "reads"
        # a read may see other threads' atomics or not (a race numba allows); a store may land
        # before or after them: either way the replay that finds the winner cannot know which
        refuse(f"the kernel also reads or stores it ({verb} it at line {other.line}), so which value wins is not "
               "the atomic's alone: other threads' atomics may come before or after that access, and the "
               "derivative cannot tell which")
    draws = [s for s in walk(ir.body) if isinstance(s, Draw)]
    if draws:      # the replay passes skip writes, and a draw writes its generator state
        refuse(f"the kernel draws random numbers (line {draws[0].line}), which the replay that finds the "
               "winner cannot draw again")
    referenced = live_names(ir.body)
    olds = [s for s in walk(ir.body) if isinstance(s, Atomic) and s.target in referenced]
    if olds:       # the replay passes skip atomics, so an old value would be undefined there
        refuse(f"the kernel uses the old value of the atomic at line {olds[0].line}, which the replay that finds "
               "the winner cannot reproduce")
    others = sorted({s.op for s in walk(ir.body) if isinstance(s, Atomic) and s.array == atomic.array} - {atomic.op})
    if others and set(others) <= set(EXTREMA) and owned is not None and atomic.array in owned():
        others = []  # each element is one thread's: its max/min run in that thread's program order,
        # and the final value is still one contribution or the initial value, the winner
    if others:     # add then min differs from min then add: the final value depends on the thread order
        refuse(f"the kernel also applies atomic {', '.join(others)} to it, so its final value depends on the "
               "order in which threads arrive")
    both = sorted((loaded & (stored | atomics)) & params)
    if both:       # the replay skips stores and atomics, so such a read would see other values
        refuse(f"the kernel reads arrays it writes ({', '.join(both)}), so a replay cannot see the values "
               "the atomic saw")


def enclosing_loop(ir: KernelIR, stmt):
    """The innermost dynamic loop whose header or body holds `stmt`, or None."""
    found = None
    for s in walk(ir.body):
        if isinstance(s, Loop) and any(t is stmt for t in walk(list(s.header) + list(s.body))):
            found = s
    return found


def referenced_names(node, dead: frozenset = frozenset(), live: set | None = None) -> set[str]:
    """Every name a statement list reads (operands, indices, conditions, loop registers), leaving
    out the statements whose ids are in `dead` and the If phis whose targets are not in `live`."""
    out: set[str] = set()

    def visit(v):
        if isinstance(v, str):
            out.add(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)
        elif dataclasses.is_dataclass(v):
            if id(v) in dead:
                return
            for f in dataclasses.fields(v):
                if f.name == "phis" and live is not None:
                    visit([(a, b) for target, a, b in v.phis if target in live])
                elif f.name not in ("target", "array", "op", "line", "name", "file"):
                    visit(getattr(v, f.name))
    visit(node)
    return out


def live_names(body) -> set[str]:
    """The names some effect depends on: referenced_names less those read only by assignments (and
    If phis) whose own targets nothing live reads, such as the old value that an inlined helper
    (`return cuda.atomic.max(...)`) returns and its caller drops."""
    assigns = [s for s in walk(body) if isinstance(s, Assign)]
    live = referenced_names(body)
    while True:
        dead = frozenset(id(s) for s in assigns if s.target not in live)
        fewer = referenced_names(body, dead, live)
        if fewer == live:
            return live
        live = fewer


def extremum_atomics(ir: KernelIR, activity: dict[str, str]) -> list[Atomic]:
    """The atomic max/min statements on differentiable arrays, in program order."""
    return [s for s in walk(ir.body) if isinstance(s, Atomic) and s.op in EXTREMA
            and activity.get(s.array) in DIFFERENTIABLE]


def extremum_arrays(extrema: list[Atomic]) -> list[str]:
    """The arrays those statements target, each once, in order of first appearance: the statements
    on one array share its scratch copies (final values, initial values, winners)."""
    return list(dict.fromkeys(s.array for s in extrema))


# ----------------------------------------------------------------------------- the pipeline

@dataclass
class Analysis:
    """What the code generator needs to know about a function being differentiated."""
    activity: dict[str, str]          # every array and scalar, kernel-allocated arrays included
    varied: set[str]                  # SSA values that carry derivatives
    owned: set[str] = field(default_factory=set)   # adjoints updated without atomics (reverse)


def analyze(ir: KernelIR, activity: dict[str, str], launch: LaunchShape, mode: str, seams=None) -> Analysis:
    """The one analysis pipeline, for kernels launched from the host and for functions that
    device-side `autodiff` differentiates alike: activities of kernel-allocated arrays, taped
    loads, activity, the Const-array check, ownership, and (reverse only: the forward kernel reads
    each value with its tangent, so it is as well defined as the primal) the cross-thread
    write-after-read check. `seams` (harness/engine/seams.py) may replace the ownership and taping
    analyses."""
    owned_of = seams.owned_arrays if seams is not None else owned_arrays
    activity = dict(activity)
    for arr in ir.local_arrays:           # kernel-allocated float arrays carry derivatives
        activity[arr.name] = "duplicated" if np.issubdtype(np.dtype(arr.dtype), np.floating) else "const"
    if mode == "reverse":
        (seams.mark_taped_loads if seams is not None else mark_taped_loads)(ir)
    varied = varied_values(ir, activity, owned=lambda: owned_of(ir, launch))
    check_const_arrays(ir, activity, varied)
    owned = owned_of(ir, launch)
    check_shared_generator_states(ir, launch)
    if mode == "reverse":
        check_cross_thread_war(ir, launch, owned)
        # each thread's own local arrays, and the copies of constant arrays every thread makes alike
        private = {p.name for p in ir.local_arrays if p.kind != "shared"}
        check_stores_every_thread_makes(ir, launch, {a for a, act in activity.items()
                                                     if act in DIFFERENTIABLE and a not in private}, varied)
    return Analysis(activity, varied, owned if mode == "reverse" else set())
