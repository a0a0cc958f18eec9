"""Analyses over the SSA form: activity (which values carry derivatives) and index ownership
(which array adjoints each thread may update without atomics).
"""
from __future__ import annotations

import dataclasses

from dataclasses import dataclass, field

import numpy as np

from ..core.errors import ActivityError, UnsupportedError
from .ir import Atomic, Assign, If, KernelIR, Lit, Load, Loop, Nested, Prim, Special, Store, file_of, walk
from .rules import NO_RULE_MESSAGE, PARTIALS, PIECEWISE_CONSTANT
from .types import is_float

DIFFERENTIABLE = ("duplicated", "duplicated_no_need", "batch_duplicated", "active")
SHUFFLES = ("shfl", "shfl_up", "shfl_down", "shfl_xor")      # args: (mask, value, lane or delta)


# ----------------------------------------------------------------------------- activity

def varied_values(ir: KernelIR, activity: dict[str, str]) -> set[str]:
    """SSA values that depend on a differentiable input (forward activity analysis).

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
                if s.op in ("max", "min"):
                    check_extremum(ir, s)
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


def _used_atoms(ir: KernelIR) -> set[str]:
    used = set()
    for s in walk(ir.body):
        if isinstance(s, Assign):
            e = s.expr
            used |= {a for a in getattr(e, "args", ()) if isinstance(a, str)}
            used |= {a for a in getattr(e, "index", ()) if isinstance(a, str)}
            used |= {a for a in (getattr(e, "partials", None) or ()) if isinstance(a, str)}
        elif isinstance(s, (Store, Atomic)):
            used |= {a for a in s.index if isinstance(a, str)}
            if isinstance(s.value, str):
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
    registers and loads."""
    stored = {s.array for s in walk(ir.body) if isinstance(s, (Store, Atomic))}
    used = _used_atoms(ir)

    def replay_needs_tape(t) -> str | None:
        if isinstance(t, Assign) and isinstance(t.expr, Load) and t.expr.array in stored:
            return f"'{t.expr.array}' is read in a nested loop and written by the kernel"
        if isinstance(t, Atomic) and t.target in used:
            return f"the value returned by cuda.atomic.{t.op} is used in a nested loop"
        return None

    def visit(stmts, depth):
        for s in stmts:
            if isinstance(s, If):
                visit(s.body, depth)
                visit(s.orelse, depth)
            elif isinstance(s, Loop):
                for inner in list(s.header) + list(s.body):
                    for t in walk([inner]):
                        why = replay_needs_tape(t)
                        if why is None:
                            continue
                        if depth > 0 or any(t is x for x in _nested_loop_stmts(s)):
                            raise UnsupportedError(f"{why}: the reverse sweep cannot replay that value",
                                                   file=file_of(ir, t), line=t.line)
                        s.taped_loads.add(t.target)
                visit(s.body, depth + 1)

    visit(ir.body, 0)


def _nested_loop_stmts(loop: Loop):
    for s in walk(loop.body):
        if isinstance(s, Loop):
            yield from walk(s.header)
            yield from walk(s.body)


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

_GLOBAL = {"grid.0": "gx", "grid.1": "gy", "grid.2": "gz"}
_THREAD = {"tid.x": "tx", "tid.y": "ty", "tid.z": "tz", "bid.x": "bx", "bid.y": "by", "bid.z": "bz"}
_FOLD = {("tx", "bx*bdim.x"): "gx", ("ty", "by*bdim.y"): "gy", ("tz", "bz*bdim.z"): "gz"}
THREAD_SYMBOLS = {"gx", "gy", "gz", "tx", "ty", "tz", "bx", "by", "bz", "laneid",
                  "bx*bdim.x", "by*bdim.y", "bz*bdim.z"}


def _add(a: dict, b: dict, sign: int = 1) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + sign * v
    return {k: v for k, v in out.items() if v != 0}


def _fold(form: dict) -> dict:
    """blockIdx.x * blockDim.x + threadIdx.x is the global index gx."""
    for (t, b), g in _FOLD.items():
        if t in form and form.get(b) == form[t]:
            c = form.pop(t)
            form.pop(b)
            form[g] = form.get(g, 0) + c
    return form


def affine_forms(ir: KernelIR) -> dict[str, dict | None]:
    """Each integer SSA value as {symbol: coefficient} ('1' for the constant term), or None."""
    forms: dict[str, dict | None] = {p.name: {p.name: 1} for p in ir.params if p.kind == "scalar"}
    if ir.param_forms is not None:
        forms.update({p.name: ir.param_forms.get(p.name) for p in ir.params if p.kind == "scalar"})

    def form_of(a):
        if isinstance(a, Lit):
            return {"1": int(a.value)} if isinstance(a.value, int) else None
        return forms.get(a)

    def visit(stmts):
        for s in stmts:
            if isinstance(s, Assign):
                forms[s.target] = _expr_form(s.expr, form_of)
            elif isinstance(s, Atomic) and s.target:
                forms[s.target] = None
            elif isinstance(s, If):
                visit(s.body)
                visit(s.orelse)
                for target, a, b in s.phis:
                    fa, fb = form_of(a), form_of(b)
                    forms[target] = fa if fa is not None and fa == fb else None
            elif isinstance(s, Loop):
                # registers change every iteration, so do the loop variable and what derives
                # from them: iteration k of one thread may meet iteration k' of another
                for reg, end in s.carried:
                    forms[reg] = _grid_stride_form(s, reg, end, form_of)
                if s.var:
                    forms[s.var] = None
                visit(s.header)
                visit(s.body)

    visit(ir.body)
    return forms


GRID_SIZE_X = ({"gsize.0": 1}, {"bdim.x*gdim.x": 1})


def _grid_stride_form(loop: Loop, reg: str, end, form_of) -> dict | None:
    """A grid-stride counter: starts at +-gx + uniform terms and advances by +-G per iteration,
    G = gridDim.x * blockDim.x, the launch's thread count along x. Thread t's values are then
    congruent to +-t (mod G), distinct for the G threads, so the counter stays injective in the
    thread however many iterations it runs. Its form keeps the start's and adds a symbol per loop
    for the iteration's multiple of G: uniform, so two accesses agree only if they use the same
    counter with the same offset. Any other register: None (unknown)."""
    start = form_of(reg)
    if not start or start.get("gx") not in (1, -1) or any(k in THREAD_SYMBOLS for k in start if k != "gx"):
        return None
    update = next((x for x in _flat(loop.body) if x.target == end), None)
    if update is None or not isinstance(update.expr, Prim) or update.expr.op not in ("add", "sub"):
        return None
    a, b = update.expr.args
    if a != reg:
        return None
    defined = {x.target: x.expr for x in _flat(loop.body)}

    def body_form(atom):           # `i += cuda.gridsize(1)` computes G inside the body
        if isinstance(atom, str) and atom in defined and atom != reg:
            return _expr_form(defined[atom], body_form)
        return form_of(atom)
    step = body_form(b)
    if step is None:
        return None
    if update.expr.op == "sub":
        step = {k: -v for k, v in step.items()}
    if step not in GRID_SIZE_X and {k: -v for k, v in step.items()} not in GRID_SIZE_X:
        return None
    return {**start, f"stride{loop.id}": 1}


def _flat(stmts):
    """The top-level statements of a body (an update under an `if` is a phi, not an Assign)."""
    return [x for x in stmts if isinstance(x, Assign)]


def _expr_form(e, form_of):
    if isinstance(e, Special):
        if e.name in _GLOBAL:
            return {_GLOBAL[e.name]: 1}
        if e.name in _THREAD:
            return {_THREAD[e.name]: 1}
        if e.name == "laneid":
            return {"laneid": 1}
        return {e.name: 1}                    # uniform over the launch: bdim, gdim, shapes, sizes
    if isinstance(e, Load) or not isinstance(e, Prim):
        return None
    args = [form_of(a) for a in e.args]
    if any(f is None for f in args):
        return None
    if e.op in ("copy", "cast_int64", "cast_int32"):
        return dict(args[0])
    if e.op == "add":
        return _fold(_add(args[0], args[1]))
    if e.op == "sub":
        return _fold(_add(args[0], args[1], -1))
    if e.op == "neg":
        return {k: -v for k, v in args[0].items()}
    if e.op == "mul":
        a, b = args
        for x, y in ((a, b), (b, a)):
            if set(x) <= {"1"}:
                c = x.get("1", 0)
                return {k: c * v for k, v in y.items() if c * v != 0}
        if len(a) == 1 and len(b) == 1:       # a product of two symbols, e.g. blockIdx.x * blockDim.x
            (sa, ca), (sb, cb) = next(iter(a.items())), next(iter(b.items()))
            name = "*".join(sorted((sa, sb), key=lambda s: (s not in THREAD_SYMBOLS, s)))
            return {name: ca * cb}
    return None


@dataclass(frozen=True)
class LaunchShape:
    """Which launch dimensions have more than one thread (only those must be covered)."""
    dims: tuple[int, ...]             # e.g. (0,) for a 1-D launch, (0, 1) for 2-D
    block_dims: tuple[int, ...] = ()  # dimensions whose blocks hold more than one thread


_AXIS_OF = {"gx": 0, "gy": 1, "gz": 2, "tx": 0, "ty": 1, "tz": 2}


def injective(index_forms: list, launch: LaunchShape, per_block: bool = False, needed: set | None = None) -> bool:
    """An index tuple is thread-injective when every used launch dimension's thread coordinate
    appears in exactly one component, alone among thread symbols, with a nonzero coefficient.
    Global arrays need global coordinates; shared arrays (per_block) need only distinct threads
    of one block, so threadIdx coordinates serve as well. `needed` overrides the dimensions that
    must be covered (those a guard has not pinned already)."""
    allowed = ("gx", "gy", "gz", "tx", "ty", "tz") if per_block else ("gx", "gy", "gz")
    if needed is None:
        needed = set(launch.block_dims if per_block else launch.dims)
    seen = set()
    for form in index_forms:
        if form is None:
            return False
        thread = [k for k in form if k in THREAD_SYMBOLS]
        if len(thread) > 1:
            return False
        if thread:
            sym = thread[0]
            if sym not in allowed or _AXIS_OF[sym] in seen:
                return False
            seen.add(_AXIS_OF[sym])
    return needed <= seen


def _pin(cond_expr, form_of) -> dict | None:
    """`a == b` where a - b is c * (one thread coordinate) + uniform terms: the comparison holds
    for one value of that coordinate, so the guarded code runs in one thread along its axis.
    Returns the difference form (the pin), or None."""
    if not (isinstance(cond_expr, Prim) and cond_expr.op == "eq"):
        return None
    fa, fb = (form_of(a) for a in cond_expr.args)
    if fa is None or fb is None:
        return None
    diff = _add(fa, fb, -1)
    thread = [k for k in diff if k in THREAD_SYMBOLS]
    if len(thread) != 1 or thread[0] not in _AXIS_OF:
        return None
    return diff


def _accesses(ir: KernelIR, forms: dict) -> dict[str, list]:
    """Each array's accesses (loads, stores, atomics) as (pins, index forms); pins are the
    frozenset of thread-pinning guards (`if i == 0:`) the access sits under."""
    out: dict[str, list] = {}

    def record(s, pins):
        if isinstance(s, (Store, Atomic)):
            array, index = s.array, s.index
        elif isinstance(s, Assign) and isinstance(s.expr, Load):
            array, index = s.expr.array, s.expr.index
        else:
            return
        out.setdefault(array, []).append((pins, [_form_of(a, forms) for a in index]))

    visit_guarded(ir, forms, record, ir.entry_pins)
    return out


def _form_of(a, forms: dict):
    return {"1": int(a.value)} if isinstance(a, Lit) and isinstance(a.value, int) else \
        None if isinstance(a, Lit) else forms.get(a)


def visit_guarded(ir: KernelIR, forms: dict, fn, pins: frozenset = frozenset()) -> None:
    """Call fn(statement, pins) for every statement, with the thread-pinning guards around it."""
    defs = {s.target: s.expr for s in walk(ir.body) if isinstance(s, Assign)}
    form_of = lambda a: _form_of(a, forms)   # noqa: E731

    def visit(stmts, pins):
        for s in stmts:
            fn(s, pins)
            if isinstance(s, If):
                pin = _pin(defs.get(s.cond), form_of) if isinstance(s.cond, str) else None
                key = frozenset(pin.items()) if pin else None
                visit(s.body, pins | {key} if key else pins)
                visit(s.orelse, pins)
            elif isinstance(s, Loop):
                visit(s.header, pins)
                visit(s.body, pins)

    visit(ir.body, pins)


def owned_arrays(ir: KernelIR, launch: LaunchShape) -> set[str]:
    """Arrays whose elements are each touched by one thread only: each element of their adjoint
    is then updated by a single thread, so plain `+=` is race-free, and no thread can read what
    another writes. Reasoned over index sets: the accesses of different threads are disjoint when
    one index coordinate (or a few) is the same thread-injective function of the thread id in
    every access, whatever the other coordinates are (`pos[i, 0]`, `pos[i, 1]`; `x[k, j + 1] =
    f(x[k, j])` in a loop of thread k), and a guard `if i == 0:` around every access pins that
    axis to one thread. Pins must be the same for every access."""
    forms = affine_forms(ir)
    owned = {p.name for p in ir.local_arrays if p.kind == "local"}    # private to each thread
    shared = {p.name for p in ir.local_arrays if p.kind == "shared"}
    for array, accesses in _accesses(ir, forms).items():
        per_block = array in shared
        pins = accesses[0][0]
        if any(p != pins for p, _ in accesses):
            continue
        pinned = set()
        for pin in pins:
            sym = next(k for k, _ in pin if k in _AXIS_OF)
            if per_block or sym.startswith("g"):
                pinned.add(_AXIS_OF[sym])
        needed = set(launch.block_dims if per_block else launch.dims) - pinned
        first = accesses[0][1]
        common = [d for d in range(len(first))
                  if first[d] is not None and all(idx[d] == first[d] for _, idx in accesses)]
        if injective([first[d] for d in common], launch, per_block=per_block, needed=needed):
            owned.add(array)
    return owned


def check_cross_thread_war(ir: KernelIR, launch: LaunchShape, owned: set[str]) -> None:
    """Refuse a global array that the kernel both writes and reads at indices other threads may
    share (thread i reads A[i + 1] while thread i + 1 overwrites it). The primal already races
    there, and the reverse sweep, which replays reads from registers, cannot know which value a
    read saw. Shared arrays are ordered by barriers instead; a one-thread launch has no others."""
    if not launch.dims:
        return
    params = {p.name for p in ir.params if p.kind == "array"}
    written = {s.array: s for s in walk(ir.body) if isinstance(s, (Store, Atomic))}
    for s in walk(ir.body):
        if isinstance(s, Assign) and isinstance(s.expr, Load):
            a = s.expr.array
            if a in params and a in written and a not in owned:
                w = written[a]
                at = f"line {w.line}" if file_of(ir, w) == file_of(ir, s) else f"{file_of(ir, w)}:{w.line}"
                raise UnsupportedError(
                    f"'{a}' is written ({at}) and read (line {s.line}) at indices that other "
                    "threads may share: a cross-thread write-after-read the reverse sweep cannot replay",
                    file=file_of(ir, s), line=s.line)


def check_extremum(ir: KernelIR, atomic: Atomic) -> None:
    """An atomic max/min on a differentiable array is differentiated through its winner: the thread
    whose value became the final one (the lowest thread on a tie; the initial value on a tie with
    it). Finding the winner takes two passes over the grid before the derivative launch, which
    replay the kernel without its stores; that replay sees the same values only when the kernel
    reads no array it writes and has no dynamic loop. Anything else is refused, naming the line."""
    def refuse(why: str):
        raise UnsupportedError(f"cuda.atomic.{atomic.op} on differentiable '{atomic.array}': {why}",
                               file=file_of(ir, atomic), line=atomic.line)
    params = {p.name for p in ir.params if p.kind == "array"}
    loaded = {s.expr.array for s in walk(ir.body) if isinstance(s, Assign) and isinstance(s.expr, Load)}
    stored = {s.array for s in walk(ir.body) if isinstance(s, Store)}
    if any(isinstance(s, Loop) for s in walk(ir.body)):
        refuse("its winner is found by replaying the kernel, which is not done for kernels with dynamic loops")
    if atomic.array in loaded or atomic.array in stored:
        refuse("the kernel also reads or stores it, so which value wins is not the atomic's alone")
    referenced = _referenced(ir.body)
    olds = [s for s in walk(ir.body) if isinstance(s, Atomic) and s.target in referenced]
    if olds:       # the replay passes skip atomics, so an old value would be undefined there
        refuse(f"the kernel uses the old value of the atomic at line {olds[0].line}, which the replay that finds "
               "the winner cannot reproduce")
    same = [s for s in walk(ir.body) if isinstance(s, Atomic) and s.array == atomic.array and s.op in ("max", "min")]
    if len(same) > 1:  # the passes record one winning thread per element, not which of its statements won
        refuse(f"the kernel applies atomic max/min to it in {len(same)} statements (lines "
               f"{', '.join(str(s.line) for s in same)}); the winner is found per thread, not per statement")
    others = sorted({s.op for s in walk(ir.body) if isinstance(s, Atomic) and s.array == atomic.array} - {atomic.op})
    if others:     # add then min differs from min then add: the final value depends on thread order
        refuse(f"the kernel also applies atomic {', '.join(others)} to it, so its final value depends on the "
               "order in which threads arrive")
    both = sorted((loaded & stored) & params)
    if both:
        refuse(f"the kernel reads arrays it writes ({', '.join(both)}), so a replay cannot see the values "
               "the atomic saw")


def _referenced(node) -> set[str]:
    """Every name a statement list reads (operands, indices, conditions, loop registers)."""
    out: set[str] = set()

    def visit(v):
        if isinstance(v, str):
            out.add(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)
        elif dataclasses.is_dataclass(v):
            for f in dataclasses.fields(v):
                if f.name not in ("target", "array", "op", "line", "name", "file"):
                    visit(getattr(v, f.name))
    visit(node)
    return out


def extremum_atomics(ir: KernelIR, activity: dict[str, str]) -> list[Atomic]:
    """The atomic max/min statements on differentiable arrays, in program order."""
    return [s for s in walk(ir.body) if isinstance(s, Atomic) and s.op in ("max", "min")
            and activity.get(s.array) in DIFFERENTIABLE]


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
    varied = varied_values(ir, activity)
    check_const_arrays(ir, activity, varied)
    owned = owned_of(ir, launch)
    if mode == "reverse":
        check_cross_thread_war(ir, launch, owned)
    return Analysis(activity, varied, owned if mode == "reverse" else set())
