"""The code generator's state while it writes one function, every field in one place, and the few
helpers every emitting step uses (output lines, shadow names). The steps themselves are functions
over this state in the emit_*.py modules (codegen.py says which does what); adjoint emitters and
mutants get it as `em`. The class has slots: an attribute that is not a declared field cannot be set."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from harness.engine.analyses.activity import DIFFERENTIABLE
from harness.engine.ir.ssa import KernelIR, Loop, walk
from harness.engine.options import EngineOptions
from harness.engine.ir.types import is_float


def body_text(lines: list[str]) -> str:
    """The emitted lines as a function body. A block left empty (a loop or branch whose statements
    all lowered to nothing, `for m in range(k): pass`) gets a `pass`: every emitter opens blocks
    freely, and this is the one place that sees the whole text."""
    out = []
    for k, text in enumerate(lines):
        out.append(text)
        code = text.split("  #")[0].rstrip()         # generated lines carry `  # line N` comments
        if not code.endswith(":") or code.lstrip().startswith("#"):
            continue
        indent = len(code) - len(code.lstrip())
        following = next((t for t in lines[k + 1:] if t.strip()), None)
        if following is None or len(following) - len(following.lstrip()) <= indent:
            out.append(" " * (indent + 4) + "pass")
    return "\n".join(out)


def differentiable_arrays(ir: KernelIR, activity: Mapping) -> set[str]:
    """The kernel's arrays (parameters and local arrays) that have shadows. The code generator's
    `diff_arrays` and the launcher's count of uniform-index slots (emit_uniform.slot_count) must
    agree, so both take them from here."""
    return {p.name for p in list(ir.params) + list(ir.local_arrays)
            if p.kind != "scalar" and activity.get(p.name) in DIFFERENTIABLE}

@dataclass(slots=True)
class EmitState:
    ir: KernelIR
    sig: "codegen.Signature"                  # noqa: F821  (what the kernel is specialised for)
    varied: set[str]                          # values that carry a derivative
    emitters: Mapping[str, Callable]          # adjoint emitter per statement kind (emit_adjoints.py)
    rules: Mapping | None                     # derivative rules; None: rules.PARTIALS
    prefix: str                               # shadow-name prefix no kernel name starts with (d_, dd_, ...)
    diff_arrays: set[str]                     # arrays (parameters and allocated) that have shadows
    taped_loads: set[str]                     # loads of written arrays that dynamic loops tape
    has_loops: bool                           # the kernel has a dynamic loop (so a tape)
    defined: set[str]                         # values the forward sweep has computed so far
    lines: list[str] = field(default_factory=list)
    depth: int = 1                            # indentation level of the next line
    nested_names: dict = field(default_factory=dict)      # id(ir.Nested) -> derivative function's name
    nested_tapes: dict = field(default_factory=dict)      # id(ir.Nested) -> loops of a taping reverse (pass_state)
    extrema: dict[int, int] = field(default_factory=dict)  # id(atomic max/min statement) -> its array's scratch index
    extremum_rank: dict[int, tuple] = field(default_factory=dict)  # id(statement) -> (j, n): j-th of its array's n
    extremum_counted: bool = False   # some max/min runs in a dynamic loop: contributions named by count (emit_extrema.py)
    prefetched: dict[str, str] = field(default_factory=dict)   # shadow -> register holding its first read
    prefetch_names: list[str] = field(default_factory=list)
    early_prefetch: dict[int, dict | None] = field(default_factory=dict)  # block -> reads hoisted into the forward sweep
    taping: bool = False                      # writing a reverse kernel (its forward sweep tapes loops)
    uniform: dict[tuple, int] = field(default_factory=dict)   # reads at literal indices reduced per block (emit_uniform.py)
    virtual_blocks: bool = False              # launch indices read the virtual block's (coarsen.py)
    hoisted: dict[tuple, str] = field(default_factory=dict)   # (id(primitive), operand) -> register of its partial (emit_adjoints.py)
    in_loops: set[int] | None = None          # ids of the statements inside dynamic loops (computed on first use)
    lane_sums: dict = field(default_factory=dict)   # id of a read whose adjoint lane groups sum first -> axis (emit_lane_sums.py)
    lane_site: str | None = None              # the axis of the read being differentiated, if it is one
    lane_sum_queue: list = field(default_factory=list)    # (shadow, index, register, type, axis) waiting to be summed
    lane_sum_count: int = 0                   # registers named so far
    unmirrored: set = field(default_factory=set)   # ids of barriers whose mirror orders nothing (replay_needs.unmirrored_barrier)
    int_constants: dict | None = None         # names assigned one integer literal (emit_lane_sums.py; computed on first use)
    replay_needs: set[str] | None = None      # names a loop's reverse replay must compute (replay_needs.py); None: all
    block_tape: set[str] = field(default_factory=set)    # loop registers taped once per block in shared memory (emit_loops.py)
    zero_pending: dict = field(default_factory=dict)     # (shadow, index text) -> (store, line of its zeroing) a later add may replace (emit_deferred_zeros.py)
    defer_zeros: bool = False                 # a store's adjoint may remember its zeroing (set by emit_reverse for one statement)
    read_site: object = None                  # the read whose adjoint is being accumulated, if it is one

    @classmethod
    def start(cls, ir: KernelIR, sig, varied: set[str], emitters: Mapping, rules: Mapping | None) -> "EmitState":
        taken = set(ir.types) | {p.name for p in ir.params}
        prefix = "d_"
        while any(n.startswith(prefix) for n in taken):
            prefix = "d" + prefix
        return cls(ir=ir, sig=sig, varied=varied, emitters=emitters, rules=rules, prefix=prefix,
                   diff_arrays=differentiable_arrays(ir, sig.activity),
                   taped_loads={t for s in walk(ir.body) if isinstance(s, Loop) for t in s.taped_loads},
                   has_loops=any(isinstance(s, Loop) for s in walk(ir.body)),
                   defined={p.name for p in ir.params if p.kind == "scalar"})

    @property
    def options(self) -> EngineOptions:
        """The engine's options (tape_size, recompute_limit, loop_jacobian_limit, ...), as the
        signature carries them."""
        return self.sig.options

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

    def barrier(self, comment: str = ""):
        """`cuda.syncthreads()`, after a block-scope fence. The barrier alone should make every
        thread's shared-memory stores visible to the block; on the H200 (CUDA 13, numba-cuda 0.30.4)
        it did not on the first launch of a freshly loaded kernel in which one thread took a branch
        with a global store before the barrier (the winner of an atomic min): its shared store was
        missed by the thread reading it after the barrier in 11 of 12 fresh processes, and in 0 of 12
        with the fence (`cuda.syncwarp()` instead: 8 of 12). kernels/fuzz_found.py:
        extremum_tie_before_barrier; plain numba reproducer: harness/tools/first_launch_barrier.py.
        A fence costs a few cycles beside the barrier itself."""
        self.line("cuda.threadfence_block()")
        self.line("cuda.syncthreads()" + comment)

    def comment_line(self, line: int) -> str:
        return f"  # line {line}"


EXTREMUM_SCRATCH = ("S", "I", "W", "V")   # final values, initial values, winners, each contribution's value


def extremum_scratch_count(em: EmitState) -> int:
    """One set of scratch arrays per array that atomic max/min statements target (codegen.py
    numbers them)."""
    return len(set(em.extrema.values()))


def extremum_params(em: EmitState) -> list[str]:
    """The scratch arrays each targeted array adds to a generated function's parameters
    (emit_extrema.py says what they hold)."""
    return [f"_x{name}{k}" for k in range(extremum_scratch_count(em)) for name in EXTREMUM_SCRATCH]
