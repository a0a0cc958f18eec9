"""The lowering pass's state, every field in one place (see normalize.py for the pass itself).

Lowering a dynamic loop's body may have to start over with wider register types (lower_loops.py),
so everything lowering a body changes must be saved first and put back after: `snapshot` and
`restore` copy every field except those marked `kept` (each with the reason it is not restored),
so a new field is saved without anyone remembering to (tests/engine/test_pipeline.py checks it). The
class has slots: an attribute that is not a declared field cannot be set.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field, fields

from harness.core.errors import UnsupportedError
from harness.engine.frontend.source import KernelSource
from harness.engine.ir.ssa import Assign, Lit, Load, Param, Special
from harness.engine.ir.types import infer_prim_type, literal_type


def _copy(value):
    """Containers are copied (their items are never changed in place); anything else is shared."""
    return type(value)(value) if isinstance(value, (dict, list, set)) else value


def kept(why: str):
    """Metadata of a field that a loop's snapshot leaves alone: `why` says why that is right."""
    return {"kept": why}


@dataclass(slots=True)
class LoweringState:
    src: KernelSource                       # the function whose body is being lowered (a helper while inlined)
    params: dict[str, Param]               # array and scalar parameters by name, allocated arrays included
    arrays: dict[str, str]                 # array names visible in the current body -> kernel array (inlined helpers rename)
    env: dict[str, str]                    # source name -> its current SSA name
    types: dict[str, str]                  # SSA name -> dtype
    taken: set[str]                        # every SSA name handed out
    user_names: set[str]                   # every name the kernel's source uses: temporaries never shadow one
    line: int = field(metadata=kept("the line of the statement being lowered; the loop resets it itself"))
    prefix: str = ""                       # SSA base-name prefix inside an inlined helper
    call_stack: list[str] = field(default_factory=list)
    calls: list[tuple[str, str, int]] = field(default_factory=list)   # (callee, caller, line) of inlined helpers
    nested: list = field(default_factory=list)             # device-side autodiff calls (ir.Nested)
    nodiff: set[str] = field(default_factory=set)          # values computed inside custom-rule primals
    nodiff_depth: int = 0                  # >0 while lowering a custom rule's primal
    nloops: int = 0
    njumps: int = 0
    temps: set[str] = field(default_factory=set)           # names made by temp(): safe to rename in place
    local_arrays: list[Param] = field(default_factory=list)
    views: dict[str, tuple] = field(default_factory=dict)   # array names bound to a row view -> its fixed leading index atoms
    expired: dict[str, int] = field(default_factory=dict)  # array names rebound in a block that has ended -> line
    depth_ctl: int = 0                     # >0 inside an if or a loop
    versions: dict[str, int] = field(default_factory=dict)  # SSA base name -> last version number
    ntemp: int = 0
    scope: int = 0                         # which body is being lowered: 0 the kernel's, each inlined call a new one
    nscopes: int = 0                       # scopes handed out so far
    local_functions: dict = field(default_factory=dict)   # inner functions visible here -> lower_local_functions.LocalFunction
    outer_scopes: dict = field(default_factory=dict)      # scope -> (env, arrays, views) of a body suspended in a call
    tuple_names: dict[str, int] = field(default_factory=dict)   # names bound to a device function's n-tuple -> n
    returned_arrays: dict = field(default_factory=dict)    # a helper's returned values that are arrays: _retK -> ArrayResult

    @classmethod
    def start(cls, src: KernelSource, params: list[Param]) -> "LoweringState":
        scalars = {p.name: p for p in params if p.kind == "scalar"}
        return cls(src=src, params={p.name: p for p in params},
                   arrays={p.name: p.name for p in params if p.kind == "array"},
                   env={name: name for name in scalars}, types={name: p.dtype for name, p in scalars.items()},
                   taken={p.name for p in params},
                   user_names={n.id for n in ast.walk(src.tree) if isinstance(n, ast.Name)},
                   line=src.tree.lineno, call_stack=[src.name])

    # -- the loop's snapshot
    def snapshot(self) -> dict:
        """Copies of every field but the kept ones (containers copied one level deep)."""
        return {f.name: _copy(getattr(self, f.name)) for f in fields(self) if "kept" not in f.metadata}

    def restore(self, snap: dict) -> None:
        for name, value in snap.items():
            setattr(self, name, _copy(value))          # copied again: a snapshot can be restored twice

    # -- names
    def fresh(self, base: str) -> str:
        base = (self.prefix + base).replace("!", "_")
        n = self.versions.get(base, -1) + 1
        while True:
            name = base if n == 0 else f"{base}_{n}"
            if name not in self.taken:
                break
            n += 1
        self.versions[base] = n
        self.taken.add(name)
        return name

    def temp(self) -> str:
        while True:
            self.ntemp += 1
            name = f"_t{self.ntemp}"
            if name not in self.taken and name not in self.user_names:
                break
        self.taken.add(name)
        self.temps.add(name)
        return name

    def err(self, node, what) -> UnsupportedError:
        return self.src.unsupported(node, what)

    # -- emitting
    def emit_assign(self, out: list, target: str, expr) -> str:
        out.append(Assign(target, expr, self.line))
        if self.nodiff_depth:
            self.nodiff.add(target)
        if isinstance(expr, Load):
            self.types[target] = self.params[expr.array].dtype
        elif isinstance(expr, Special):
            self.types[target] = "int64"
        else:
            self.types[target] = infer_prim_type(expr.op, [self.atom_type(a) for a in expr.args])
        return target

    def atom_type(self, a) -> str:
        return literal_type(a.value) if isinstance(a, Lit) else self.types[a]
