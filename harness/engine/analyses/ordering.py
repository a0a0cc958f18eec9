"""Global arrays whose cross-thread accesses barriers order: a wavefront or a ping-pong inside one block.

A global array that the kernel writes at elements other threads read (soft-DTW's anti-diagonal
recursion: thread i writes R[b, i, j] on diagonal p, threads i and i + 1 read it on diagonal p + 1,
with `cuda.syncthreads()` after every diagonal) is well defined on a GPU when every such pair of
accesses is ordered by a barrier. Its reverse is then sound with what the engine already emits: the
forward sweep is the primal, so each read sees the value it saw there (loop iterations tape it); the
reverse sweep mirrors every barrier, so it walks the same intervals between barriers backwards, and
in each interval no element that one thread writes is touched by another. A store's adjoint
(`d_v += dA[c]; dA[c] = 0`) therefore runs after every later read's `cuda.atomic.add` into dA[c]
(they were in later intervals, reversed earlier, a barrier between) and before every earlier
read's, which belong to the value the element held before. That is the semantics shared memory
already has; this module proves that a global array is used the same way.

The condition, for every access (load or store, no atomics) of a global array A:
- *block-local*: some index coordinates have the same form in every access and, together,
  injectively contain the block index along each launch dimension with more than one block
  (`R[blockIdx.x, i, j]`; `A[gx]`; nothing in a one-block launch), with nothing else that varies:
  threads of different blocks, which no barrier orders, never touch one element;
- *ordered within the block*: for every store and every other access (itself included) that may
  run between the same two barriers, two different threads of the block touch different elements.
  Barriers count when every thread reaches each of them: at the top level of the kernel's body or of
  a loop's body (the barrier analysis has proven such a loop block-uniform); `cuda.syncwarp()` does
  not count (the primal's orders only the lanes of one warp). Two accesses may share
  an interval when they sit in the same segment between top-level barriers (in a loop, the segment
  after the last barrier runs in the same interval as the next iteration's first segment); in the
  same segment of a loop with barriers they run in the same iteration, so the loop's counter and
  everything uniform computed in the iteration is the same value for both threads. Different
  elements are proven either by coordinates with the same form in both accesses that are injective
  in the thread within the block (threadIdx, or a guard `if tid == p:` that pins it, also given
  the other axes' coordinates: `if tx + ty == p:`), or by a
  linear combination of the coordinates that is free of thread-dependent values in each access and
  differs by a nonzero constant between the two (soft-DTW: i + j is p + 2 where it writes, p or
  p + 1 where it reads, after the guard `I + J == p` is used to replace J by p - I);
- every coordinate of every access is provably non-negative (a negative index wraps around to the
  end of the axis, where the arithmetic above says nothing): thread and launch indices, max(0, ...),
  and differences that an enclosing `if` bounds (`if t >= 1: ... A[t - 1]`).
Anything else keeps the cross-thread write-after-read refusal (ownership.check_cross_thread_war).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from harness.engine.analyses.barriers import thread_dependent_values
from harness.engine.analyses.ownership import THREAD_SYMBOLS, LaunchShape, expr_form
from harness.engine.ir.ssa import Assign, Atomic, Barrier, If, KernelIR, Lit, Load, Loop, Nested, Prim, Store, walk

_COORDS = {"tx": 0, "ty": 1, "tz": 2, "gx": 0, "gy": 1, "gz": 2}
_THREAD_COORDS = (*_COORDS, "laneid")
_BLOCK = {"bx": 0, "by": 1, "bz": 2, "gx": 0, "gy": 1, "gz": 2,
          "bx*bdim.x": 0, "by*bdim.y": 1, "bz*bdim.z": 2}
_NONNEG_SPECIAL = ("tid.", "bid.", "bdim.", "gdim.", "grid.", "gsize.", "shape.", "size.", "laneid")
_MAX_COMBINATION_RANK = 6        # coordinates tried in linear combinations (3^6 combinations)


@dataclass
class _Access:
    store: bool
    path: tuple                   # where it runs: ('kernel', segment), then ('loop', id, segment, segments) or ('opaque', id)
    index: list                   # coordinate forms, the guards' equations substituted
    raw: list                     # coordinate forms as computed
    pins: dict                    # launch axis -> the form a guard pins its thread coordinate to
    ineqs: list                   # forms the guards around it prove >= 0
    subst: dict = None            # the guards' equations solved: symbol -> the form it equals
    stmt: object = None           # the Store or Assign(Load) statement


def barrier_ordered(ir: KernelIR, launch: LaunchShape, array: str) -> bool:
    """Whether every cross-thread access pair of global `array` is ordered by barriers within one
    block (module docstring). False for a function differentiated on the device, whose callers'
    barriers are not known here."""
    if ir.param_forms is not None or any(isinstance(s, Atomic) and s.array == array for s in walk(ir.body)):
        return False
    facts = _Facts(ir)
    accesses = facts.accesses(array)
    if not accesses or not all(facts.nonnegative(a) for a in accesses):
        return False
    if not _block_local(accesses, launch, facts):
        return False
    for x in accesses:
        if not x.store:
            continue
        for y in accesses:
            aligned = _same_interval(x.path, y.path)
            if aligned is not None and not facts.distinct_elements(x, y, aligned, launch):
                return False
    return True


def interval_exclusive(ir: KernelIR, launch: LaunchShape, array: str) -> bool:
    """Whether, between any two barriers, each element of shared `array` is touched by one thread
    of the block at most (loads included; the module docstring's conditions, for every pair of
    accesses rather than for those with a store). The reverse sweep mirrors every barrier, so in
    each of its intervals the adjoints of an element's accesses (`dA[e] += ...` for a read, `d =
    dA[e]; dA[e] = 0` for a store) then run in that one thread: plain read-modify-writes, no
    atomics. A shared tree reduction qualifies: in the level of stride s, thread t < s alone
    touches t and t + s (the guard t < s, the loop's condition s > 0 and the thread indices'
    signs prove t + s differs from every other thread's t' and t' + s). Atomics on the array, a
    function differentiated on the device (whose callers' barriers are unknown), a kernel that
    calls device-side autodiff (whose derivative may touch the array out of sight here) and a
    possibly negative index (which wraps around) keep the atomics."""
    if ir.param_forms is not None or any(isinstance(s, Nested) or (isinstance(s, Atomic) and s.array == array)
                                         for s in walk(ir.body)):
        return False
    facts = _Facts(ir)
    accesses = facts.accesses(array)
    if not accesses or not all(facts.nonnegative(a) for a in accesses):
        return False
    for x, y in itertools.combinations_with_replacement(accesses, 2):
        aligned = _same_interval(x.path, y.path)
        if aligned is not None and not (facts.distinct_elements(x, y, aligned, launch)
                                        or facts.distinct_elements(y, x, aligned, launch)):
            return False
    return True


def _same_interval(px: tuple, py: tuple) -> set | None:
    """None when a barrier always separates accesses at positions px and py; otherwise the ids of
    the loops whose iteration both run in whenever they share an interval."""
    aligned: set = set()
    for ex, ey in itertools.zip_longest(px, py):
        if ex is None or ey is None:
            other = ex or ey
            return None if _middle(other) else aligned
        if ex[0] == "kernel":
            if ex[1] != ey[1]:
                return None
            continue
        if ex[0] == "loop" and ey[0] == "loop" and ex[1] == ey[1]:
            if _segment_class(ex) != _segment_class(ey):
                return None
            if ex[2] != ey[2]:
                return aligned        # the last segment of one iteration and the first of the next
            aligned.add(ex[1])
            continue
        return None if _middle(ex) or _middle(ey) else aligned
    return aligned


def _segment_class(entry) -> object:
    _, _, seg, nseg = entry
    return "wrap" if seg in (0, nseg - 1) else seg


def _middle(entry) -> bool:
    """A segment of a loop's body with a top-level barrier before and after it in every iteration:
    separated from everything outside the loop."""
    return entry[0] == "loop" and _segment_class(entry) != "wrap"


def _block_local(accesses: list, launch: LaunchShape, facts: "_Facts") -> bool:
    """Coordinates with one form in every access that contain the block index of each launch axis
    with more than one block (of each axis with more than one thread when that is not known)."""
    first = accesses[0].raw
    covered = set()
    for d, form in enumerate(first):
        if any(a.raw[d] != form for a in accesses):
            continue
        blockish = [k for k in form if k in _BLOCK]
        others = [k for k in form if k != "1" and k not in _BLOCK]
        if len(blockish) == 1 and not any(facts.varies_in_launch(k) for k in others):
            covered.add(_BLOCK[blockish[0]])
    return set(launch.dims if launch.grid_dims is None else launch.grid_dims) <= covered


class _Facts:
    """Affine forms of a kernel's integer values (an unknown value is a symbol '@name' of its own),
    where each value is defined, which values differ between threads, and the equations and
    inequalities the `if`s around each statement guarantee."""

    def __init__(self, ir: KernelIR):
        self.ir = ir
        # a loop's carried register is assigned its entry value only: that assignment says nothing
        # about the register inside or after the loop
        carried = {reg for s in walk(ir.body) if isinstance(s, Loop) for reg, _ in s.carried}
        self.defs = {s.target: s.expr for s in walk(ir.body) if isinstance(s, Assign) and s.target not in carried}
        self.phis = {}                # phi target -> (the if's condition, then value, else value)
        self.loops = {}               # SSA name -> ids of the loops whose iterations redefine it
        self.loop_of_var = {}         # a for loop's variable -> the loop
        self.varying = thread_dependent_values(ir)
        self.forms = self._forms()

    # ------------------------------------------------------------------ forms

    def _forms(self) -> dict:
        forms = {p.name: {p.name: 1} for p in self.ir.params if p.kind == "scalar"}

        def form_of(a):
            if isinstance(a, Lit):
                return {"1": int(a.value)} if isinstance(a.value, int) else None
            return forms.get(a, {"@" + a: 1})

        def visit(stmts, loops):
            for s in stmts:
                if isinstance(s, Assign):
                    self.loops[s.target] = loops
                    f = expr_form(s.expr, form_of)
                    forms[s.target] = f if f is not None and self._affine(f) else {"@" + s.target: 1}
                elif isinstance(s, Atomic) and s.target:
                    self.loops[s.target] = loops
                    forms[s.target] = {"@" + s.target: 1}
                elif isinstance(s, If):
                    visit(s.body, loops)
                    visit(s.orelse, loops)
                    for target, a, b in s.phis:
                        self.phis[target] = (s.cond, a, b)
                        self.loops[target] = loops
                        fa, fb = form_of(a), form_of(b)
                        forms[target] = fa if fa is not None and fa == fb else {"@" + target: 1}
                elif isinstance(s, Loop):
                    inner = loops + (s.id,)
                    for name in [reg for reg, _ in s.carried] + ([s.var] if s.var else []):
                        forms[name] = {"@" + name: 1}
                        self.loops[name] = inner
                    if s.var:
                        self.loop_of_var[s.var] = s
                    visit(s.header, inner)
                    visit(s.body, inner)

        visit(self.ir.body, ())
        return forms

    @staticmethod
    def _affine(form: dict) -> bool:
        """Products are symbols of their own only when they are launch constants (blockIdx.x *
        blockDim.x and the like), never of a thread coordinate (t * t) or an unknown value."""
        return all("*" not in k or not any(f.startswith("@") or f in _THREAD_COORDS for f in k.split("*"))
                   for k in form)

    def form(self, a) -> dict | None:
        if isinstance(a, Lit):
            return {"1": int(a.value)} if isinstance(a.value, int) else None
        return self.forms.get(a)

    # ------------------------------------------------------------------ symbols

    def thread_dependent(self, sym: str) -> bool:
        if "*" in sym:
            return any(self.thread_dependent(f) for f in sym.split("*"))
        if sym in _THREAD_COORDS:
            return True
        return sym.startswith("@") and sym[1:] in self.varying

    def specific(self, sym: str, aligned: set) -> bool:
        """Whether `sym` may hold different values in two accesses that share an interval (by
        different threads of one block, in the iterations `aligned` says they share)."""
        if sym == "1":
            return False
        if self.thread_dependent(sym):
            return True
        return sym.startswith("@") and not set(self.loops.get(sym[1:], ())) <= aligned

    def varies_in_launch(self, sym: str) -> bool:
        """Whether `sym` may differ between blocks or over time (anything but launch constants and
        scalar arguments)."""
        return any(f.startswith("@") or f in THREAD_SYMBOLS or f in _BLOCK for f in sym.split("*"))

    # ------------------------------------------------------------------ guards

    def _int(self, a) -> bool:
        if isinstance(a, Lit):
            return isinstance(a.value, int) and not isinstance(a.value, bool)
        return str(self.ir.types.get(a, "")).startswith("int")

    def _comparison(self, op: str, args, truth: bool):
        """(equations, inequalities) that `op(*args) == truth` implies, each an affine form that
        is == 0 or >= 0."""
        a, b = args
        if not (self._int(a) and self._int(b)):
            return [], []
        fa, fb = self.form(a), self.form(b)
        if fa is None or fb is None:
            return [], []
        diff = _sub(fa, fb)                                  # a - b
        if not truth:
            op = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}[op]
        if op == "eq":
            return [diff], []
        return [], {"ge": [diff], "gt": [_sub(diff, {"1": 1})],
                    "le": [_neg(diff)], "lt": [_sub(_neg(diff), {"1": 1})]}.get(op, [])

    def _never(self, value, k, k_value: bool, truth: bool) -> bool:
        """Whether `value` cannot be `truth` where the condition k is k_value: value is a literal,
        k itself, or k's negation."""
        if isinstance(value, Lit):
            return bool(value.value) != truth
        if value == k:
            return k_value != truth
        negates = lambda a, b: isinstance(self.defs.get(a), Prim) and self.defs[a].op == "not" \
            and self.defs[a].args[0] == b   # noqa: E731
        if negates(value, k) or negates(k, value):
            return (not k_value) != truth
        return False

    def implied(self, cond, truth: bool, depth: int = 0):
        """What `cond == truth` implies: (equations, inequalities)."""
        if depth > 32 or isinstance(cond, Lit) or cond is None:
            return [], []
        if cond in self.phis:         # c = then if k else other: `a and b`, `a or b` are such phis
            k, then, other = self.phis[cond]
            # cond == truth means (k and then == truth) or (not k and other == truth): use the
            # one side whose other alternative is impossible
            if self._never(other, k, False, truth):
                return _merge(self.implied(k, True, depth + 1), self.implied(then, truth, depth + 1))
            if self._never(then, k, True, truth):
                return _merge(self.implied(k, False, depth + 1), self.implied(other, truth, depth + 1))
            return [], []
        e = self.defs.get(cond)
        if not isinstance(e, Prim):
            return [], []
        if e.op in ("cast_bool", "copy"):
            return self.implied(e.args[0], truth, depth + 1)
        if e.op == "not":
            return self.implied(e.args[0], not truth, depth + 1)
        if e.op in ("eq", "ne", "lt", "le", "gt", "ge"):
            return self._comparison(e.op, e.args, truth)
        return [], []

    # ------------------------------------------------------------------ accesses

    def accesses(self, array: str) -> list:
        """Every load and store of `array`, with its interval position, forms, pins and bounds."""
        out = []

        def record(s, here, eqs, ineqs):
            if isinstance(s, Store) and s.array == array:
                store, index = True, s.index
            elif isinstance(s, Assign) and isinstance(s.expr, Load) and s.expr.array == array:
                store, index = False, s.expr.index
            else:
                return
            raw = [self.form(a) or {"@?": 1} for a in index]
            subst, pins = self._solve(eqs)
            out.append(_Access(store, here, [_apply(f, subst) for f in raw], raw, pins, ineqs, subst, s))

        def body(stmts, prefix, loop_id, eqs, ineqs):
            """A container's top-level statements: the kernel's body, or that of a loop with barriers."""
            segments = 1 + sum(_block_barrier(s) for s in stmts)
            seg = 0
            for s in stmts:
                if _block_barrier(s):
                    seg += 1
                    continue
                entry = ("kernel", seg) if loop_id is None else ("loop", loop_id, seg, segments)
                statement(s, prefix + (entry,), eqs, ineqs)

        def statement(s, here, eqs, ineqs):
            record(s, here, eqs, ineqs)
            if isinstance(s, If):         # barriers inside an if are not counted (fewer intervals)
                te, ti = self.implied(s.cond, True)
                fe, fi = self.implied(s.cond, False)
                for t in s.body:
                    statement(t, here, eqs + te, ineqs + ti)
                for t in s.orelse:
                    statement(t, here, eqs + fe, ineqs + fi)
            elif isinstance(s, Loop):
                opaque = here + (("opaque", s.id),)
                # a while loop's body runs where its condition held, on the registers it tested
                ce, ci = self.implied(s.cond, True) if s.kind == "while" else ([], [])
                if any(_block_barrier(t) for t in s.body):
                    for t in s.header:
                        statement(t, opaque, eqs, ineqs)
                    body(s.body, here, s.id, eqs + ce, ineqs + ci)
                else:                     # its iterations are not aligned between threads
                    for t in s.header:
                        statement(t, opaque, eqs, ineqs)
                    for t in s.body:
                        statement(t, opaque, eqs + ce, ineqs + ci)

        body(self.ir.body, (), None, [], [])
        return out

    def _solve(self, eqs: list):
        """A substitution that the equations justify: each eliminates one symbol with coefficient
        +-1, an unknown thread-dependent value first (J in `I + J == p`), then a thread coordinate
        (a pin: `if tid == p`), then any other unknown value. Also the pins found."""
        subst: dict = {}
        pins: dict = {}
        for eq in eqs:
            eq = _apply(eq, subst)
            order = sorted((k for k, c in eq.items() if k != "1" and abs(c) == 1),
                           key=lambda k: (0 if k.startswith("@") and self.thread_dependent(k) else
                                          1 if k in _COORDS else 2 if k.startswith("@") else 3))
            if not order or (not order[0].startswith("@") and order[0] not in _COORDS):
                continue
            pivot = order[0]
            c = eq[pivot]
            value = {k: -v * c for k, v in eq.items() if k != pivot}   # pivot = -(rest) / c, c = +-1
            subst = {k: _apply(v, {pivot: value}) for k, v in subst.items()}
            subst[pivot] = value
            if pivot in _COORDS:
                pins[_COORDS[pivot]] = value
        pins = {axis: _apply(v, subst) for axis, v in pins.items()}
        return subst, pins

    # ------------------------------------------------------------------ the proofs

    def nonnegative(self, access: _Access) -> bool:
        return all(self._nonneg_form(f, access.ineqs) or self._nonneg_form(g, access.ineqs)
                   for f, g in zip(access.raw, access.index))

    def _nonneg_form(self, form: dict, ineqs: list) -> bool:
        if self._plainly_nonneg(form):
            return True
        return any(self._plainly_nonneg(_sub(form, e)) for e in ineqs)

    def _plainly_nonneg(self, form: dict, depth: int = 0) -> bool:
        """A sum of non-negative symbols with non-negative coefficients and a non-negative constant."""
        return form.get("1", 0) >= 0 and all(
            c > 0 and self._nonneg_symbol(k, depth) for k, c in form.items() if k != "1")

    def _nonneg_symbol(self, sym: str, depth: int) -> bool:
        if depth > 16:
            return False
        sym = sym.rstrip("'")             # the same value in another thread or iteration
        if not sym.startswith("@"):
            if sym in THREAD_SYMBOLS or sym.startswith(_NONNEG_SPECIAL):
                return True
            return "*" in sym and all(self._nonneg_symbol(p, depth + 1) for p in sym.split("*"))
        name = sym[1:]
        if name in self.loop_of_var:
            loop = self.loop_of_var[name]
            start = self.form(loop.start)
            return loop.kind == "for" and loop.step > 0 and start is not None and \
                self._plainly_nonneg(start, depth + 1)
        e = self.defs.get(name)
        if not isinstance(e, Prim):
            return False
        if e.op == "abs":
            return True
        args = [self.form(a) for a in e.args]
        ok = [f is not None and self._plainly_nonneg(f, depth + 1) for f in args]
        if e.op == "max":
            return any(ok)
        if e.op in ("min", "floordiv", "mul", "add", "copy"):
            return all(ok)
        return False

    def distinct_elements(self, x: _Access, y: _Access, aligned: set, launch: LaunchShape) -> bool:
        """Whether two different threads of one block, running x and y in one interval (in the
        iterations of the `aligned` loops), always touch different elements."""
        def prime(form, keep=()):
            return {(k + "'" if self.specific(k, aligned) and k not in keep else k): v for k, v in form.items()}

        # coordinates that are one injective function of the thread in both accesses
        y_same_thread = [prime(f, keep=_COORDS) for f in y.index]
        covered = set()
        for fx, fy in zip(x.index, y_same_thread):
            if fx != fy:
                continue
            threads = [k for k in fx if k != "1" and self.specific(k, aligned)]
            if len(threads) == 1 and threads[0] in _COORDS:
                covered.add(_COORDS[threads[0]])
        # a guard pins an axis's coordinate to one value in both (`if x + y == p` pins x to p - y,
        # the same value once y is known to be the same)
        while True:
            pinned = {axis for axis, value in x.pins.items()
                      if axis in y.pins and value == prime(y.pins[axis], keep=_COORDS)
                      and all(_COORDS.get(k) in covered for k in value if self.specific(k, aligned))}
            if pinned <= covered:
                break
            covered |= pinned
        # the same, on the coordinates as computed, or as a pinned thread's own coordinate
        # (`A[0]` under `if t == 0` is `A[t]`)
        for d in range(min(len(x.raw), len(y.raw))):
            for fx in _spellings(x, d):
                threads = [k for k in fx if k != "1" and self.specific(k, aligned)]
                if len(threads) == 1 and threads[0] in _COORDS and \
                        any(fx == prime(fy, keep=_COORDS) for fy in _spellings(y, d)):
                    covered.add(_COORDS[threads[0]])
        if set(launch.block_dims) <= covered:
            return True
        # a coordinate that the guards bound apart: x's at least one below y's, or above
        bounds = list(x.ineqs) + [prime(f) for f in y.ineqs]
        for fx, fy in list(zip(x.raw, y.raw)) + list(zip(x.index, y.index)):
            diff = _sub(fx, prime(fy))
            if any(self._nonneg_form(_sub(d, {"1": 1}), bounds) for d in (diff, _neg(diff))):
                return True
        # a linear combination of the coordinates that separates them by a constant
        rank = min(len(x.index), _MAX_COMBINATION_RANK)
        y_other = [prime(f) for f in y.index]
        for coefs in itertools.product((-1, 0, 1), repeat=rank):
            if not any(coefs):
                continue
            fx = _combine(coefs, x.index)
            fy = _combine(coefs, y_other)
            if any(self.specific(k, aligned) for k in fx) or any(k.endswith("'") for k in fy):
                continue
            diff = _sub(fx, fy)
            if set(diff) == {"1"}:
                return True
        return False


def _spellings(access: _Access, d: int) -> list:
    """Forms equal to an access's coordinate d: as computed, with the guards' equations
    substituted, and a thread coordinate that a guard pins to that value."""
    out = [access.raw[d], access.index[d]]
    out += [{k: 1} for k, v in (access.subst or {}).items() if k in _COORDS and v == access.index[d]]
    return out


def _block_barrier(s) -> bool:
    """cuda.syncthreads(), not cuda.syncwarp(): the primal's syncwarp orders no two warps."""
    return isinstance(s, Barrier) and not s.warp


def _sub(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) - v
    return {k: v for k, v in out.items() if v != 0}


def _neg(a: dict) -> dict:
    return {k: -v for k, v in a.items()}


def _combine(coefs, forms) -> dict:
    out: dict = {}
    for c, f in zip(coefs, forms):
        if c:
            out = _sub(out, _neg({k: c * v for k, v in f.items()}))
    return out


def _apply(form: dict, subst: dict) -> dict:
    out: dict = {}
    for k, v in form.items():
        for k2, v2 in (subst[k].items() if k in subst else ((k, 1),)):
            out[k2] = out.get(k2, 0) + v * v2
    return {k: v for k, v in out.items() if v != 0}


def _merge(a, b):
    return a[0] + b[0], a[1] + b[1]


def apart_in_thread(ir: KernelIR, array: str) -> frozenset:
    """Pairs (frozensets of two statement ids) of `array`'s accesses that one thread, running both
    with the same values of every name (one pass of a straight run of statements), always makes
    at different elements: in some coordinate the two forms differ by a nonzero constant, or the
    guards around them bound one at least one above the other (`sh[t]` and `sh[t + s]` in a tree
    level, where the loop's condition gives s > 0). Both accesses must be provably non-negative
    (a negative index wraps around onto another coordinate's element); coordinates are taken to be
    in bounds, as every analysis here does. The reverse sweep uses this to keep a store's shadow
    element in a register past other accesses of the array (emit_deferred_zeros.py)."""
    facts = _Facts(ir)
    accesses = [a for a in facts.accesses(array) if facts.nonnegative(a)]
    out = set()
    for x, y in itertools.combinations(accesses, 2):
        if x.stmt is y.stmt or len(x.raw) != len(y.raw):
            continue
        bounds = list(x.ineqs) + list(y.ineqs)
        for fx, fy in list(zip(x.raw, y.raw)) + list(zip(x.index, y.index)):
            if "@?" in fx or "@?" in fy:          # a coordinate with no affine form
                continue
            diff = _sub(fx, fy)
            if set(diff) == {"1"} or any(facts._nonneg_form(_sub(d, {"1": 1}), bounds) for d in (diff, _neg(diff))):
                out.add(frozenset((id(x.stmt), id(y.stmt))))
                break
    return frozenset(out)
