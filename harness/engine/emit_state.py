"""The code generator's state while it writes one function, every field in one place, and the few
helpers every emitting step uses (output lines, shadow names). The steps themselves are functions
over this state in the emit_*.py modules (codegen.py says which does what); adjoint emitters and
mutants get it as `em`. The class has slots: an attribute that is not a declared field cannot be set."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from .analysis import DIFFERENTIABLE
from .ir import KernelIR, Loop, walk
from .options import EngineOptions
from .types import is_float



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
    extrema: dict[int, int] = field(default_factory=dict)  # id(atomic max/min statement) -> its scratch index
    prefetched: dict[str, str] = field(default_factory=dict)   # shadow -> register holding its first read
    prefetch_names: list[str] = field(default_factory=list)
    early_prefetch: dict[int, dict | None] = field(default_factory=dict)  # block -> reads hoisted into the forward sweep
    taping: bool = False                      # writing a reverse kernel (its forward sweep tapes loops)
    uniform: dict[tuple, int] = field(default_factory=dict)   # reads at literal indices reduced per block (emit_uniform.py)
    virtual_blocks: bool = False              # launch indices read the virtual block's (coarsen.py)
    hoisted: dict[tuple, str] = field(default_factory=dict)   # (id(primitive), operand) -> register of its partial (emit_adjoints.py)
    in_loops: set[int] | None = None          # ids of the statements inside dynamic loops (computed on first use)

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

    def comment_line(self, line: int) -> str:
        return f"  # line {line}"


def extremum_params(em: EmitState) -> list[str]:
    """The scratch, initial-value and winner arrays each atomic max/min adds to a generated
    function's parameters (emit_extrema.py says what they hold)."""
    return [f"_x{name}{k}" for k in range(len(em.extrema)) for name in ("S", "I", "W")]
