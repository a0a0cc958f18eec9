"""Which threads touch which elements: affine index forms over the thread coordinates, thread
injectivity, thread-pinning guards, and from them the arrays each thread owns (plain `+=` adjoints)
and the refusal of cross-thread write-after-read. Reasoned over index sets: one index coordinate
that is an injective function of the thread id makes the accesses of different threads disjoint.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import UnsupportedError
from harness.engine.analyses.barriers import thread_dependent_values
from harness.engine.analyses.launch_branches import launch_paths, launch_variants, may_meet
from harness.engine.ir.ssa import Assign, Atomic, Draw, If, KernelIR, Lit, Load, Loop, Prim, Special, Store, file_of, walk

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


def affine_forms(ir: KernelIR, grid_step=None) -> dict[str, dict | None]:
    """Each integer SSA value as {symbol: coefficient} ('1' for the constant term), or None.
    `grid_step`: which step forms make a counter a grid-stride counter (is_grid_step when None)."""
    grid_step = grid_step or is_grid_step
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
                forms[s.target] = expr_form(s.expr, form_of)
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
                    forms[reg] = _grid_stride_form(s, reg, end, form_of, grid_step)
                if s.var:
                    forms[s.var] = None
                visit(s.header)
                visit(s.body)

    visit(ir.body)
    return forms


GRID_SIZE_X = ({"gsize.0": 1}, {"bdim.x*gdim.x": 1})


def is_grid_step(step: dict) -> bool:
    """A counter's step (its form) is +-G, the launch's thread count along x."""
    return step in GRID_SIZE_X or {k: -v for k, v in step.items()} in GRID_SIZE_X


def _grid_stride_form(loop: Loop, reg: str, end, form_of, grid_step=is_grid_step) -> dict | None:
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
            return expr_form(defined[atom], body_form)
        return form_of(atom)
    step = body_form(b)
    if step is None:
        return None
    if update.expr.op == "sub":
        step = {k: -v for k, v in step.items()}
    if not grid_step(step):
        return None
    return {**start, f"stride{loop.id}": 1}


def _flat(stmts):
    """The top-level statements of a body (an update under an `if` is a phi, not an Assign)."""
    return [x for x in stmts if isinstance(x, Assign)]


def expr_form(e, form_of):
    """The affine form of one expression, its operands' forms given by form_of; None if not affine."""
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
    grid_dims: tuple[int, ...] | None = None   # dimensions with more than one block (None: unknown)


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
    """Each array's accesses (loads, stores, atomics) as (pins, index forms, statement); pins are
    the frozenset of thread-pinning guards (`if i == 0:`) the access sits under."""
    out: dict[str, list] = {}

    def record(s, pins):
        if isinstance(s, (Store, Atomic)):
            array, index = s.array, s.index
        elif isinstance(s, Assign) and isinstance(s.expr, Load):
            array, index = s.expr.array, s.expr.index
        else:
            return
        out.setdefault(array, []).append((pins, [_form_of(a, forms) for a in index], s))

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


def owned_arrays(ir: KernelIR, launch: LaunchShape, grid_step=None, every_if: bool = False) -> set[str]:
    """Arrays whose elements are each touched by one thread only: each element of their adjoint
    is then updated by a single thread, so plain `+=` is race-free, and no thread can read what
    another writes. Reasoned over index sets: the accesses of different threads are disjoint when
    one index coordinate (or a few) is the same thread-injective function of the thread id in
    every access, whatever the other coordinates are (`pos[i, 0]`, `pos[i, 1]`; `x[k, j + 1] =
    f(x[k, j])` in a loop of thread k), and a guard `if i == 0:` around every access pins that
    axis to one thread. Pins must be the same for every access. Accesses in the two branches of a
    launch-invariant `if` never meet in one launch (launch_branches.py): each choice of branches is
    judged on its own accesses. `grid_step`: as for affine_forms; `every_if`: as for launch_paths."""
    forms = affine_forms(ir, grid_step)
    paths = launch_paths(ir, every_if)
    owned = {p.name for p in ir.local_arrays if p.kind == "local"}    # private to each thread
    shared = {p.name for p in ir.local_arrays if p.kind == "shared"}
    for array, accesses in _accesses(ir, forms).items():
        variants = launch_variants(accesses, lambda access: paths[id(access[2])])
        if all(_thread_owned(variant, launch, array in shared) for variant in variants):
            owned.add(array)
    return owned


def _thread_owned(accesses: list, launch: LaunchShape, per_block: bool) -> bool:
    """Whether accesses that may run in one launch touch each element from one thread only."""
    pins = accesses[0][0]
    if any(p != pins for p, _, _ in accesses):
        return False
    pinned = set()
    for pin in pins:
        sym = next(k for k, _ in pin if k in _AXIS_OF)
        if per_block or sym.startswith("g"):
            pinned.add(_AXIS_OF[sym])
    needed = set(launch.block_dims if per_block else launch.dims) - pinned
    first = accesses[0][1]
    common = [d for d in range(len(first))
              if first[d] is not None and all(idx[d] == first[d] for _, idx, _ in accesses)]
    return injective([first[d] for d in common], launch, per_block=per_block, needed=needed)


def check_cross_thread_war(ir: KernelIR, launch: LaunchShape, owned: set[str]) -> None:
    """Refuse a global array that the kernel both writes and reads at indices other threads may
    share (thread i reads A[i + 1] while thread i + 1 overwrites it). The primal already races
    there, and the reverse sweep, which replays reads from registers, cannot know which value a
    read saw. Shared arrays are ordered by barriers instead; a one-thread launch has no others, and
    a global array that barriers order within one block as they order shared memory (ordering.py:
    a wavefront, a ping-pong) is accepted. A write in the other branch of a launch-invariant `if`
    never runs in the same launch as the read (launch_branches.py), so it does not count, and an
    array whose accesses are thread-owned in every launch that runs the read is safe there even when
    the other branch's accesses are not."""
    from harness.engine.analyses.ordering import barrier_ordered     # it builds on this module's forms
    if not launch.dims:
        return
    params = {p.name for p in ir.params if p.kind == "array"}
    writes: dict[str, list] = {}
    for s in walk(ir.body):
        if isinstance(s, (Store, Atomic)):
            writes.setdefault(s.array, []).append(s)
    paths = launch_paths(ir)
    updates = own_element_updates(ir)
    ordered: dict[str, bool] = {}
    forms, accesses = None, None
    for s in walk(ir.body):
        if isinstance(s, Assign) and isinstance(s.expr, Load):
            a = s.expr.array
            if a not in params or a not in writes or a in owned or id(s) in updates:
                continue
            if accesses is None:
                forms = affine_forms(ir)
                accesses = _accesses(ir, forms)
            # owned in every launch that runs this read: PyLops' `if rmatvec: y[ix, iz] += ...`
            # beside `else: cuda.atomic.add(y, (ixx, izz), ...)`, one branch per launch
            if all(_thread_owned(variant, launch, False)
                   for variant in launch_variants(accesses[a], lambda access: paths[id(access[2])])
                   if any(access[2] is s for access in variant)):
                continue
            meeting = [w for w in writes[a] if may_meet(paths[id(w)], paths[id(s)])]
            if not meeting:
                continue
            if a not in ordered:
                ordered[a] = barrier_ordered(ir, launch, a)
            if not ordered[a]:
                w = meeting[-1]
                at = f"line {w.line}" if file_of(ir, w) == file_of(ir, s) else f"{file_of(ir, w)}:{w.line}"
                raise UnsupportedError(
                    f"'{a}' is written ({at}) and read (line {s.line}) at indices that other "
                    "threads may share: a cross-thread write-after-read the reverse sweep cannot replay",
                    file=file_of(ir, s), line=s.line)


def own_element_updates(ir: KernelIR) -> set[int]:
    """ids of the reads that update an element in place: `a[k]` read, then written at the same
    index atoms `k` by a store later in the same block with only assignments between (`a[k] += v`,
    `a[k] *= f`, whatever k is: `wfp[b, sz, sx] += ...` at gathered positions). Another thread
    could write a[k] only by racing with this thread's own store of it, a race in the primal that
    the engine assumes away for every store; without one, the value read is the one this thread's
    store replaces, and the reverse sweep replays the thread's own read. Not inside a dynamic
    loop: there another thread may update the same element in another iteration (a stride of
    half the grid, a block stride), unordered by anything, and which update read which value is
    the launch's schedule; the ownership analysis decides those. A read of what this thread has
    just stored at the same index counts too, in a loop as well (forwarded)."""
    found: set[int] = set()

    def forwarded(stmts, i, load) -> bool:
        """`a[k] = v` then `a[k]` read back with only assignments between (SpeechBrain's
        transducer gradient: `grads[b, t, u, l] = alpha[...] + beta[...]`, then
        `grads[b, t, u, l] = -math.exp(grads[b, t, u, l] + ...)`, in a loop): the read sees this
        thread's own store unless another thread's store of the element races with it, in a loop
        too, as nothing orders the two stores; the replay tapes such a load (mark_taped_loads)."""
        for earlier in reversed(stmts[:i]):
            if isinstance(earlier, Store) and earlier.array == load.array and earlier.index == load.index:
                return True
            if not isinstance(earlier, Assign):
                return False
        return False

    def visit(stmts, in_loop=False):
        for i, s in enumerate(stmts):
            if isinstance(s, If):
                visit(s.body, in_loop)
                visit(s.orelse, in_loop)
            elif isinstance(s, Loop):
                visit(s.body, True)
            elif isinstance(s, Assign) and isinstance(s.expr, Load):
                if forwarded(stmts, i, s.expr):
                    found.add(id(s))
                    continue
                if in_loop:
                    continue
                for later in stmts[i + 1:]:
                    if isinstance(later, Store) and later.array == s.expr.array and later.index == s.expr.index:
                        found.add(id(s))
                        break
                    if not isinstance(later, Assign):
                        break

    visit(ir.body)
    return found


def _same_in_every_thread(index, forms) -> bool:
    """Whether every index coordinate is an affine form free of the thread's own indices."""
    return all(f is not None and not any(part in THREAD_SYMBOLS for k in f for part in k.split("*"))
               for f in (_form_of(a, forms) for a in index))


def check_stores_every_thread_makes(ir: KernelIR, launch: LaunchShape, differentiable: set[str],
                                    varied: set[str]) -> None:
    """Reverse mode: refuse a store of a varied value to an element of a differentiable array that
    every thread of the launch (or of a block) makes, at an index the same for all of them and
    with no guard that leaves one thread storing (TARDIS's populate_z run by six threads). The
    primal races even when every thread stores the same value, and the reverse would add the
    element's cotangent into the value's adjoint once per thread: on a GPU they all read it before
    any of them zeroes it (found on the H200: six times the gradient; the simulator's threads
    happened to take turns). A constant stored by every thread (`s[0] = 0.0`) only clears the
    cotangent, which every thread may do."""
    if not launch.dims:
        return
    forms = affine_forms(ir)

    def refuse(s):
        raise UnsupportedError(
            f"every thread stores to the same element '{s.array}[{', '.join(map(str, s.index))}]' of a "
            "differentiable array: the primal races (even with equal values), and the reverse sweep would "
            "take the element's cotangent once per thread; let one thread store it (e.g. under "
            "`if cuda.grid(1) == 0:`)", file=file_of(ir, s), line=s.line)

    def check(s, pins):
        if isinstance(s, Store) and s.array in differentiable and s.value in varied and not pins \
                and _same_in_every_thread(s.index, forms):
            refuse(s)

    visit_guarded(ir, forms, check, ir.entry_pins)
    if launch.block_dims and not ir.entry_pins and ir.param_forms is None:
        written = {t.array for t in walk(ir.body) if isinstance(t, (Store, Atomic))}
        read_only = frozenset(p.name for p in ir.params if p.kind == "array" and p.name not in written)
        _visit_block_uniform(ir, lambda t: isinstance(t, Store) and t.array in differentiable and t.value in varied,
                             refuse, read_only)


def _visit_block_uniform(ir: KernelIR, selected, refuse, read_only: frozenset = frozenset()) -> None:
    """refuse(s) for the first statement `selected` picks whose index every thread of a block
    computes alike (blockIdx, a uniform loop's counter, a scalar argument:
    barriers.thread_dependent_values) and that every thread of the block reaches (no
    thread-dependent condition or trip count around it)."""
    varying = thread_dependent_values(ir, read_only=read_only)

    def visit(stmts):
        for s in stmts:
            if selected(s) and not any(isinstance(a, str) and a in varying for a in s.index):
                refuse(s)
            if isinstance(s, If) and not (isinstance(s.cond, str) and s.cond in varying):
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, Loop) and not any(isinstance(a, str) and a in varying
                                                 for a in (s.start, s.stop, s.cond)):
                visit(s.header)
                visit(s.body)

    visit(ir.body)


def check_shared_generator_states(ir: KernelIR, launch: LaunchShape) -> None:
    """Refuse a random draw (ir.ssa.Draw) at a state index that is the same for every thread, with
    no guard that leaves one thread drawing: all threads then advance one generator state at once,
    a race whose numbers depend on the order in which threads arrive, so no launch draws what
    another did (numba's documentation asks for one state per thread)."""
    if not launch.dims:
        return
    forms = affine_forms(ir)

    def check(s, pins):
        if not isinstance(s, Draw) or pins:
            return
        if _same_in_every_thread(s.index, forms):
            raise UnsupportedError(
                f"every thread draws from the same generator state '{s.array}[{', '.join(map(str, s.index))}]': "
                "the threads race to advance it, so the numbers each one gets depend on the order in which "
                "they arrive; give each thread its own state (e.g. states[cuda.grid(1)])",
                file=file_of(ir, s), line=s.line)

    visit_guarded(ir, forms, check, ir.entry_pins)
    # only in a kernel: a function that autodiff differentiates on the device gets arguments that
    # may differ per thread, which thread_dependent_values takes for uniform ones
    if launch.block_dims and not ir.entry_pins and ir.param_forms is None:
        _refuse_block_uniform_draws(ir)


def _refuse_block_uniform_draws(ir: KernelIR) -> None:
    """A draw at an index that every thread of a block computes alike, reached by every thread of
    the block (_visit_block_uniform): the block's threads race to advance one state."""
    def refuse(s):
        raise UnsupportedError(
            f"every thread of a block draws from the same generator state '{s.array}[{', '.join(map(str, s.index))}]' "
            "(its index is the same in all of them): the threads race to advance it, so the numbers each one "
            "gets depend on the order in which they arrive; give each thread its own state "
            "(e.g. states[cuda.grid(1)])", file=file_of(ir, s), line=s.line)

    _visit_block_uniform(ir, lambda t: isinstance(t, Draw), refuse)
