"""Emit readable numba.cuda source for the forward (tangent) and reverse (adjoint) kernels.

Forward: the primal statements, each followed by its tangent.
Reverse: the primal replayed in registers (forward sweep), then the adjoint statements in reverse
order with control flow mirrored (reverse sweep). Every value the reverse sweep needs is still in
a register from the replay; only dynamic loops keep a small per-thread tape (emit_loops.py). An
in-place update such as `A[0] *= A[0]` reads `A[0]` into a register before it is overwritten.
Loops, shared state (shared arrays, shuffles, Active reductions) and early shadow reads are
emitted by the mixins in emit_loops.py, emit_parallel.py and emit_prefetch.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import UnsupportedError
from .analysis import DIFFERENTIABLE, SHUFFLES
from .emit_extrema import ExtremumEmitter
from .emit_loops import LoopEmitter
from .emit_parallel import ParallelEmitter
from .emit_prefetch import PrefetchEmitter
from .emit_uniform import UniformEmitter, uniform_slots
from .ir import Alloc, Assign, Atomic, Barrier, If, KernelIR, Load, Loop, Nested, Prim, Store, file_of, walk
from .syntax import atom, expr_text, index_text, partial_text  # noqa: F401  (re-exported)
from .types import is_float

HEADER_IMPORTS = "import math\n\nfrom numba import cuda\nfrom numpy import bool_, float16, float32, float64, int8, int16, int32, int64, uint32, uint64\n"


@dataclass
class Signature:
    """What a derivative kernel is specialised for."""
    activity: dict[str, str]          # param -> activity name
    width: int = 1                    # batch width (shadows per differentiable argument)
    owned: frozenset = frozenset()    # arrays whose adjoint updates need no atomics
    skip_store: frozenset = frozenset()   # DuplicatedNoNeed arrays never read: primal not written
    tape_size: int = 64               # iterations per dynamic loop the reverse sweep can replay


class Emitter(LoopEmitter, ParallelEmitter, PrefetchEmitter, ExtremumEmitter, UniformEmitter):
    def __init__(self, ir: KernelIR, sig: Signature, varied: set[str], *, emitters: dict | None = None,
                 rules: dict | None = None):
        self.ir, self.sig, self.varied = ir, sig, varied
        self.emitters = ADJOINT_EMITTERS if emitters is None else emitters
        self.rules = rules                    # None: rules.PARTIALS
        self.lines: list[str] = []
        self.depth = 1
        self.nested_names: dict = {}
        self.extrema: dict[int, int] = {}     # id(atomic max/min statement) -> its scratch index
        self.prefetched: dict[str, str] = {}   # shadow -> register holding its first read
        self.prefetch_names: list[str] = []
        self.early_prefetch: dict[int, dict | None] = {}   # block -> reads hoisted into the forward sweep
        self.defined: set[str] = {p.name for p in ir.params if p.kind == "scalar"}
        self.taping = False
        self.tape_size = sig.tape_size
        self.taped_loads = {t for s in walk(ir.body) if isinstance(s, Loop) for t in s.taped_loads}
        self.has_loops = any(isinstance(s, Loop) for s in walk(ir.body))
        taken = set(ir.types) | {p.name for p in ir.params}
        self.prefix = "d_"
        while any(n.startswith(self.prefix) for n in taken):
            self.prefix = "d" + self.prefix
        self.diff_arrays = {p.name for p in list(ir.params) + list(ir.local_arrays)
                            if p.kind != "scalar" and sig.activity.get(p.name) in DIFFERENTIABLE}
        self.uniform: dict[tuple, int] = {}   # reads at literal indices reduced per block (emit_uniform.py)

    # -- names
    def lanes(self):
        return range(self.sig.width)

    def d(self, name: str, lane: int) -> str:
        base = self.prefix + name
        return base if self.sig.width == 1 else f"{base}_{lane}"

    def is_varied(self, a) -> bool:
        return isinstance(a, str) and a in self.varied

    def ftype(self, name: str) -> str:
        t = self.ir.types.get(name) or self.ir.param(name).dtype
        return t if is_float(t) else "float64"

    # -- output
    def line(self, text: str):
        self.lines.append("    " * self.depth + text)

    def comment_line(self, line: int) -> str:
        return f"  # line {line}"

    def emit_if(self, s: If, then_fn, else_fn):
        """`if cond:` with both branches; an empty else is dropped, an if with nothing in it too."""
        head = len(self.lines)
        self.line(f"if {atom(s.cond)}:" + self.comment_line(s.line))
        self.depth += 1
        then_fn()
        then_empty = len(self.lines) == head + 1
        if then_empty:
            self.line("pass")
        self.depth -= 1
        mark = len(self.lines)
        self.line("else:")
        self.depth += 1
        else_fn()
        self.depth -= 1
        if len(self.lines) == mark + 1:
            del self.lines[mark:]
            if then_empty:
                del self.lines[head:]


    def primal(self, s):
        if isinstance(s, Alloc):
            self.line(self.alloc_text(s.array, s.array.name))
            return
        if isinstance(s, Barrier):
            self.line("cuda.syncthreads()" + self.comment_line(s.line))
            return
        if isinstance(s, Atomic):
            self.line(f"{s.target} = cuda.atomic.{s.op}({s.array}, {self.atomic_index(s.index)}, {atom(s.value)})")
            return
        if isinstance(s, Nested):
            call = f"{self.nested_names[id(s)]}({', '.join(self.nested_args(s))})"
            if s.targets:
                # reverse returns a tuple of adjoints; forward returns the result's tangent itself
                tuple_ = s.mode == "reverse" and len(s.targets) == 1
                self.line(f"{', '.join(s.targets)}{',' if tuple_ else ''} = {call}"
                          + self.comment_line(s.line))
            else:
                self.line(call + self.comment_line(s.line))
        elif isinstance(s, Assign):
            self.line(f"{s.target} = {expr_text(s.expr)}")
        elif isinstance(s, Store):
            if s.array not in self.sig.skip_store:
                self.line(f"{s.array}[{index_text(s.index)}] = {atom(s.value)}")

    def nested_args(self, s) -> list[str]:
        """Arguments of a device-side autodiff call, in the derivative function's order."""
        out = []
        for a in s.args:
            out.append(atom(a.value))
            if a.activity.startswith("duplicated") and (a.is_array or s.mode == "forward"):
                out.append(atom(a.shadow))
            elif a.activity == "active" and s.mode == "forward":
                out.append("0.0")
        return out

    # -- parameters
    def params(self, mode: str) -> list[str]:
        out = []
        for p in self.ir.params:
            out.append(p.name)
            act = self.sig.activity[p.name]
            if p.kind == "array" and act in DIFFERENTIABLE:
                out += [self.d(p.name, j) for j in self.lanes()]
            elif p.kind == "scalar" and act in DIFFERENTIABLE and mode == "forward":
                out += [self.d(p.name, j) for j in self.lanes()]
        if mode == "reverse" and self.active_scalars():
            out.append(self.prefix + "active_out")
        if mode == "reverse" and self.uniform:
            out.append(self.prefix + "uniform_spread")
        if mode == "reverse" and self.has_loops:
            out.append(self.prefix + "tape_overflow")
        if mode in ("forward", "reverse"):
            out += self.extremum_params()
        return out

    def active_scalars(self) -> list[str]:
        return [p.name for p in self.ir.params if p.kind == "scalar" and self.sig.activity[p.name] in DIFFERENTIABLE
                and is_float(p.dtype)]

    # ------------------------------------------------------------------ forward mode
    def forward(self, stmts):
        for s in stmts:
            if isinstance(s, Loop):
                self.plain_loop(s, self.forward, tangents=True)
                continue
            if isinstance(s, If):
                self.emit_if(s, lambda: (self.forward(s.body), self.forward_phis(s.phis, 1)),
                             lambda: (self.forward(s.orelse), self.forward_phis(s.phis, 2)))
                continue
            self.primal(s)
            if isinstance(s, Alloc):
                self.shadow_alloc(s, zero=False)
            elif self.is_extremum(s):
                self.extremum_tangent(s)
            elif isinstance(s, Atomic) and s.array in self.diff_arrays and self.is_varied(s.value):
                for j in self.lanes():
                    self.line(f"cuda.atomic.{s.op}({self.d(s.array, j)}, {self.atomic_index(s.index)}, {self.d(s.value, j)})")
            if isinstance(s, Assign) and s.target in self.varied:
                for j in self.lanes():
                    self.line(f"{self.d(s.target, j)} = {self.tangent(s, j)}")
            elif isinstance(s, Store) and s.array in self.diff_arrays:
                for j in self.lanes():
                    value = self.d(s.value, j) if self.is_varied(s.value) else "0"
                    self.line(f"{self.d(s.array, j)}[{index_text(s.index)}] = {value}")


    def forward_phis(self, phis, side: int):
        for phi in phis:
            target, src = phi[0], phi[side]
            self.line(f"{target} = {atom(src)}")
            if target in self.varied:
                for j in self.lanes():
                    value = self.d(src, j) if self.is_varied(src) else f"{self.ftype(target)}(0.0)"
                    self.line(f"{self.d(target, j)} = {value}")

    def tangent(self, s: Assign, lane: int) -> str:
        e = s.expr
        if isinstance(e, Load):
            return f"{self.d(e.array, lane)}[{index_text(e.index)}]"
        if e.op in SHUFFLES:                  # the tangent travels between lanes like the value
            mask, _, k = (atom(a) for a in e.args)
            return f"cuda.{e.op}_sync({mask}, {self.d(e.args[1], lane)}, {k})"
        terms = []
        for k, a in enumerate(e.args):
            if not self.is_varied(a):
                continue
            p = partial_text(e.op, k, e.args, s.target, self.ftype(s.target), e.partials, rules=self.rules)
            da = self.d(a, lane)
            terms.append(da if p == f"{self.ftype(s.target)}(1.0)" else
                         f"-{da}" if p == f"-{self.ftype(s.target)}(1.0)" else f"({p}) * {da}")
        if not terms:                         # e.g. a register initialised from a constant
            return f"{self.ftype(s.target)}(0.0)"
        return " + ".join(terms).replace("+ -", "- ")

    # ------------------------------------------------------------------ reverse mode
    def reverse_replay(self, stmts):
        for s in stmts:
            if isinstance(s, Loop):
                if self.taping:
                    self.loop_sweep(s, stores=True)
                else:
                    self.plain_loop(s, self.reverse_replay, tangents=False)
                continue
            if isinstance(s, Alloc) and self.taping:
                self.primal(s)
                self.shadow_alloc(s, zero=True)
                continue
            if isinstance(s, If):
                self.emit_if(s, lambda: (self.reverse_replay(s.body), self.primal_phis(s.phis, 1)),
                             lambda: (self.reverse_replay(s.orelse), self.primal_phis(s.phis, 2)))
            else:
                if self.taping and isinstance(s, Store) and id(stmts) not in self.early_prefetch:
                    self.hoist_prefetch(stmts)
                self.primal(s)
                if isinstance(s, Assign):
                    self.defined.add(s.target)
        if self.taping and id(stmts) not in self.early_prefetch:
            self.hoist_prefetch(stmts)


    def primal_phis(self, phis, side: int):
        for phi in phis:
            self.line(f"{phi[0]} = {atom(phi[side])}")
            self.defined.add(phi[0])

    def adjoint_inits(self):
        names = sorted(v for v in self.varied)
        for name in names:
            for j in self.lanes():
                self.line(f"{self.d(name, j)} = {self.ftype(name)}(0.0)")


    def accumulate_array(self, array: str, lane: int, index, value: str):
        """shadow[index] += value (the 'accumulate' emitter)."""
        self.emitters["accumulate"](self, array, lane, index, value)

    def reverse(self, stmts):
        saved = self.prefetched
        early = self.early_prefetch.pop(id(stmts), None)
        # shadows read during the forward sweep (before its first store), or else here
        self.prefetched = early if early is not None else self.emit_prefetch(stmts)
        self._reverse(stmts)
        self.prefetched = saved

    def _reverse(self, stmts):
        for s in reversed(stmts):
            kind = statement_kind(self, s)
            if kind is not None:
                self.emitters[kind](self, s)

    def reverse_phis(self, phis, side: int):
        for phi in phis:
            target, src = phi[0], phi[side]
            if target in self.varied and self.is_varied(src):
                for j in self.lanes():
                    self.line(f"{self.d(src, j)} += {self.d(target, j)}")


# ----------------------------------------------------------------------------- adjoint emitters
# The reverse sweep emits each statement's adjoint with the emitter registered for its kind
# (statement_kind); a few shared steps are emitters too. ADJOINT_EMITTERS is the default registry;
# an engine takes another through its Seams (harness/engine/seams.py), which is how the mutation
# self-test plants a bug.

def statement_kind(em, s) -> str | None:
    """The adjoint emitter a statement of the reverse sweep needs (None: it has no adjoint)."""
    if isinstance(s, Loop):
        return "loop"
    if isinstance(s, Barrier):
        return "barrier"
    if em.is_extremum(s):
        return "extremum"
    if isinstance(s, Atomic):
        return "atomic"
    if isinstance(s, Assign) and s.target in em.varied and s.expr.__class__ is Prim and s.expr.op in SHUFFLES:
        return "shuffle"
    if isinstance(s, If):
        return "if"
    if isinstance(s, Store) and s.array in em.diff_arrays:
        return "store"
    if isinstance(s, Assign) and s.target in em.varied:
        return "load" if isinstance(s.expr, Load) else "assign"
    return None


def adjoint_loop(em, s: Loop):
    em.reverse_loop(s)


def adjoint_barrier(em, s: Barrier):
    em.line("cuda.syncthreads()" + em.comment_line(s.line) + " (mirrored)")


def adjoint_extremum(em, s):
    em.extremum_adjoint(s)


def adjoint_atomic(em, s: Atomic):
    """The adjoint of an accumulation is a gather."""
    if s.array in em.diff_arrays and em.is_varied(s.value):
        sign = "+" if s.op == "add" else "-"
        for j in em.lanes():
            em.line(f"{em.d(s.value, j)} {sign}= {em.d(s.array, j)}[{index_text(s.index)}]")


def adjoint_shuffle(em, s: Assign, opposite: dict | None = None):
    for j in em.lanes():
        em.reverse_shuffle(s, j, **({"opposite": opposite} if opposite is not None else {}))


def adjoint_if(em, s: If):
    em.emit_if(s, lambda: (em.reverse_phis(s.phis, 1), em.reverse(s.body)),
               lambda: (em.reverse_phis(s.phis, 2), em.reverse(s.orelse)))


def adjoint_store(em, s: Store, consume: bool = True):
    for j in em.lanes():
        shadow = f"{em.d(s.array, j)}[{index_text(s.index)}]"
        early = em.prefetched.pop(em.d(s.array, j), None)
        if em.is_varied(s.value):
            em.line(f"{em.d(s.value, j)} += {early or shadow}")
        if consume:
            em.line(f"{shadow} = 0")       # the overwritten element's cotangent is consumed


def adjoint_load(em, s: Assign):
    e = s.expr
    for j in em.lanes():
        em.accumulate_array(e.array, j, e.index, em.d(s.target, j))


def adjoint_assign(em, s: Assign, update: str = "+="):
    """A primitive: each varied operand's adjoint gets dr times its partial (`update` is how)."""
    e = s.expr
    for j in em.lanes():
        dt = em.d(s.target, j)
        for k, a in enumerate(e.args):
            if not em.is_varied(a):
                continue
            p = partial_text(e.op, k, e.args, s.target, em.ftype(s.target), e.partials, rules=em.rules)
            one = f"{em.ftype(s.target)}(1.0)"
            term = dt if p == one else (f"-{dt}" if p == f"-{one}" else f"{dt} * ({p})")
            em.line(f"{em.d(a, j)} {update} {term}")


def accumulate(em, array: str, lane: int, index, value: str):
    """shadow[index] += value; atomic unless every access to `array` is this thread's own."""
    shadow = em.d(array, lane)
    slot = em.slot_register(array, index, lane)
    if slot is not None:
        em.line(f"{slot} += {value}")
    elif array in em.sig.owned:
        early = em.prefetched.pop(shadow, None)
        if early is not None:
            em.line(f"{shadow}[{index_text(index)}] = {early} + {value}")
        else:
            em.line(f"{shadow}[{index_text(index)}] += {value}")
    else:
        em.line(f"cuda.atomic.add({shadow}, {em.atomic_index(index)}, {value})")


def replay_iteration(em, s: Loop, tape_index: str):
    """In a dynamic loop's reverse sweep: recompute one iteration's values from the tape."""
    em.replay_block(s.header, tape_index, stores=False)
    em.replay_block(s.body, tape_index, stores=False)


def tape_index(em, s: Loop) -> str:
    """The tape entry a dynamic loop's reverse sweep reads in its current iteration."""
    return f"_r{s.id}"


def block_sum(em, target: str, index: str, value: str) -> str:
    """The statement adding one block's sum into an Active scalar's or a uniform read's slot."""
    return f"cuda.atomic.add({target}, {index}, {value})"


ADJOINT_EMITTERS = {
    # one per statement kind of the reverse sweep
    "loop": adjoint_loop, "barrier": adjoint_barrier, "extremum": adjoint_extremum, "atomic": adjoint_atomic,
    "shuffle": adjoint_shuffle, "if": adjoint_if, "store": adjoint_store, "load": adjoint_load,
    "assign": adjoint_assign,
    # shared steps
    "accumulate": accumulate, "replay-iteration": replay_iteration, "tape-index": tape_index,
    "block-sum": block_sum,
}


def function_text(ir: KernelIR, mode: str, sig: Signature, varied: set[str], *, device: bool = False,
                  name: str | None = None, nested_names: dict | None = None,
                  extrema: list | None = None, emitters: dict | None = None,
                  rules: dict | None = None) -> tuple[str, str]:
    """(name, `def` text) of the `mode` version of `ir`: a kernel, or a device function. Modes
    'extrema1' and 'extrema2' are the passes that find the winners of atomic max/min. `emitters`
    and `rules` replace ADJOINT_EMITTERS and the derivative rules (rules.PARTIALS)."""
    em = Emitter(ir, sig, varied, emitters=emitters, rules=rules)
    em.nested_names = nested_names or {}
    em.extrema = {id(s): k for k, s in enumerate(extrema or [])}
    fname = name or f"{ir.name}__{mode}" + ("_dev" if device else "")
    if mode in ("extrema1", "extrema2"):
        em.extremum_pass(ir.body, 1 if mode == "extrema1" else 2)
        params = [p.name for p in ir.params] + [f"_x{n}{k}" for k in range(len(em.extrema))
                                                for n in (("S",) if mode == "extrema1" else ("S", "I", "W"))]
        return fname, f"def {fname}({', '.join(params)}):\n" + ("\n".join(em.lines) or "    pass") + "\n"
    if mode == "primal":
        em.reverse_replay(ir.body)
    elif mode == "forward":
        em.forward(ir.body)
        if device and ir.returns:
            r = ir.returns[0]
            em.line(f"return {em.d(r, 0) if em.is_varied(r) else '0.0'}")
    elif mode == "reverse":
        if device and em.has_loops:
            loop = next(s for s in walk(ir.body) if isinstance(s, Loop))
            raise UnsupportedError("reverse mode of a device function with a dynamic loop is not supported "
                                   "yet (its tape has no overflow channel)", file=file_of(ir, loop), line=loop.line)
        em.taping = True
        if not device:
            em.uniform = uniform_slots(ir, em.diff_arrays, sig.owned)
        if em.has_loops:
            em.line("# per-thread tape: loop registers (and reads of written arrays) for each iteration")
            em.tape_declarations(ir.body)
        em.line("# forward sweep: replay the primal, keeping every value in registers")
        em.reverse_replay(ir.body)
        em.line("# reverse sweep: adjoints in reverse statement order")
        em.adjoint_inits()
        em.slot_inits()
        for r in ir.returns if device else []:
            if em.is_varied(r):           # a device function's result is seeded like an Active return
                em.line(f"{em.d(r, 0)} += {em.ftype(r)}(1.0)")
        em.reverse(ir.body)
        actives = em.active_scalars()
        if device:
            if actives:
                em.line("return " + ", ".join(em.d(a, 0) for a in actives) + ("," if len(actives) == 1 else ""))
        elif actives or em.uniform:
            em.active_reduction(actives, em.slot_targets())
    else:
        raise ValueError(mode)
    params = em.params(mode) if mode != "primal" else [p.name for p in ir.params]
    if device and mode == "reverse":
        params = [p for p in params if p != em.prefix + "active_out"]
    body = "\n".join(em.lines) or "    pass"
    deco = "@cuda.jit(device=True)\n" if device else ""
    text = f"{deco}def {fname}({', '.join(params)}):\n{body}\n"
    if em.uniform:                        # the kernel launched after it (emit_uniform.py)
        text += "\n\n" + em.finish_text(f"{fname}_finish", params)
    return fname, text


def module_text(doc: str, defs: list[str]) -> str:
    return f'"""{doc}\n"""\n{HEADER_IMPORTS}\n\n' + "\n\n".join(defs)


def describe(ir: KernelIR, mode: str, sig: Signature, origin: str) -> str:
    activities = ", ".join(f"{p.name}: {sig.activity[p.name]}" for p in ir.params)
    return (f"{mode.capitalize()}-mode code of `{ir.name}` ({origin}).\n\n"
            f"Generated by the harness AD engine; do not edit. Activities: {activities}.\n"
            f"Batch width {sig.width}; thread-owned adjoints: {', '.join(sorted(sig.owned)) or 'none'}.")


def generate(ir: KernelIR, mode: str, sig: Signature, varied: set[str], origin: str, **seams) -> tuple[str, str]:
    """Return (function name, module source) of the `mode` kernel of `ir` (`seams`: emitters, rules)."""
    fname, text = function_text(ir, mode, sig, varied, **seams)
    return fname, module_text(describe(ir, mode, sig, origin), [text])
