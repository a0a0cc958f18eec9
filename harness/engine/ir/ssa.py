"""The engine's intermediate form: structured three-address code in SSA.

Every statement computes at most one primitive from atoms (variable names or literals), so that
each derivative rule sees named operands. Control flow stays structured (`If` with explicit phi
moves), which lets the reverse sweep mirror it exactly. Every node keeps the kernel source line it
came from, for error messages and for comments in the generated kernels.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass(frozen=True)
class Lit:
    value: Union[int, float, bool]

    def __str__(self) -> str:
        return repr(self.value)


Atom = Union[str, Lit]          # a variable name or a literal


@dataclass
class Prim:
    """t = op(args): arithmetic, comparison, math call or cast.

    op 'custom' is a call with a user rule: args[0] is the value, args[1:] the operands, and
    partials[k] the (already computed) partial derivative with respect to args[k + 1].
    """
    op: str                     # add, sub, mul, div, ..., lt, eq, not, sin, cast_float32, copy
    args: tuple[Atom, ...]
    partials: tuple[Atom, ...] | None = None


@dataclass
class Load:
    """t = array[index]"""
    array: str
    index: tuple[Atom, ...]


@dataclass
class Special:
    """t = a thread/launch index: tid.x, bid.y, bdim.z, gdim.x, grid.0, gsize.0, shape.<arr>.<k>"""
    name: str


Expr = Union[Prim, Load, Special]


@dataclass
class Assign:
    target: str
    expr: Expr
    line: int


@dataclass
class Store:
    array: str
    index: tuple[Atom, ...]
    value: Atom
    line: int


@dataclass
class If:
    cond: Atom
    body: list
    orelse: list
    line: int
    phis: list[tuple[str, Atom, Atom]] = field(default_factory=list)   # (target, then, else)


@dataclass
class NestedArg:
    activity: str               # const | duplicated | duplicated_no_need | active
    value: Atom                 # a scalar atom or an array parameter name
    shadow: Atom | None = None  # duplicated: the shadow array name (or scalar tangent in forward)
    is_array: bool = False


@dataclass
class Nested:
    """A device-side autodiff(mode, f, args...) call; its derivative is a child compile job."""
    mode: str
    function: object            # the Python function f
    args: list[NestedArg]
    targets: list[str]          # reverse: adjoints of the Active args; forward: tangent of f's result
    line: int


@dataclass
class Loop:
    """A loop whose trip count is known only at run time: `for var in range(start, stop, step)`
    (kind 'for') or `while cond` (kind 'while', `header` recomputes `cond` each iteration).

    Loop-carried scalars are mutable registers: `carried` lists (register, value at the end of
    the body); the register is initialised by an ordinary copy just before the loop. The reverse
    sweep restores each iteration's registers from a per-thread tape, replays the body without
    its stores, then runs the body's adjoint.
    """
    kind: str
    body: list
    carried: list[tuple[str, Atom]]
    line: int
    id: int
    var: str | None = None
    start: Atom | None = None
    stop: Atom | None = None
    step: int = 1
    header: list = field(default_factory=list)
    cond: Atom | None = None
    taped_loads: set = field(default_factory=set)    # SSA names of loads replayed from the tape
    replayed_shared: set = field(default_factory=set)  # shared arrays whose stores the reverse sweep replays
    logged: set = field(default_factory=set)   # taped values inside this loop replayed from the value log
    log_root: bool = False                     # the outermost loop of logged values: its sweep starts the log


@dataclass
class Alloc:
    """name = cuda.shared.array(shape, dtype) or cuda.local.array(shape, dtype)."""
    array: Param
    line: int


@dataclass
class Barrier:
    """cuda.syncthreads(): mirrored at the same place in the reverse sweep. `warp`: it stands for
    cuda.syncwarp(), which the derivative kernels replace by the (stronger) block barrier while the
    primal, numba's own compile, orders only each warp's lanes: an analysis that reasons about the
    primal's order between threads of different warps must not count it."""
    line: int
    warp: bool = False


@dataclass
class Atomic:
    """cuda.atomic.<op>(array, index, value); target receives the old value (or None)."""
    op: str                     # add | sub | one of EXTREMA
    array: str
    index: tuple
    value: Atom
    target: str | None
    line: int


# The atomics differentiated through their winner (emit_extrema.py). nanmax/nanmin skip a NaN
# operand where max/min keep it; on numbers they pick the same winner, and a NaN contribution never
# equals the final value, so the same winner test serves all four.
EXTREMA = ("max", "min", "nanmax", "nanmin")


@dataclass
class Draw(Atomic):
    """target = op(array, index[0]): a draw of numba's random number generator (rules/rng.py), op
    one of its draw functions. Like an atomic it reads and writes array[index] (the generator's
    state, which it advances) and returns a value that no replay can recompute, so every analysis
    and emitter that knows atomics treats it as one; the value is never differentiated. `value`
    is unused (Lit(0))."""


Stmt = Union[Assign, Store, If, Nested, Loop, Alloc, Barrier, Atomic]


@dataclass
class Param:
    name: str
    kind: str                   # array | scalar | shared | local (the last two: kernel-allocated arrays)
    dtype: str                  # numpy dtype name
    ndim: int = 0
    shape: tuple | None = None  # shared and local arrays: their static shape


@dataclass
class KernelIR:
    name: str
    file: str
    params: list[Param]
    body: list
    types: dict[str, str] = field(default_factory=dict)   # SSA var -> bool | int64 | float32 | float64
    returns: list = field(default_factory=list)            # device functions: returned atoms
    calls: list = field(default_factory=list)              # inlined helpers: (callee, caller, line)
    nested: list = field(default_factory=list)             # Nested statements, in order
    nodiff: set = field(default_factory=set)               # values never differentiated (rule bodies)
    local_arrays: list = field(default_factory=list)       # shared and local arrays the kernel allocates
    # affine forms of scalar parameters (ownership.affine_forms): None for a kernel, whose scalar
    # arguments are uniform over the launch; a function differentiated on the device gets its
    # arguments' forms at the call site (e.g. {'gx': 1}), None for those that have none
    param_forms: dict | None = None
    # thread-pinning guards around the call site of a function differentiated on the device
    # (`if i == 0: autodiff(...)`): every access of the function sits under them
    entry_pins: frozenset = frozenset()

    def param(self, name: str) -> Param | None:
        for p in list(self.params) + list(self.local_arrays):
            if p.name == name:
                return p
        return None


def walk(stmts):
    """Every statement, depth first, in program order."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from walk(s.body)
            yield from walk(s.orelse)
        elif isinstance(s, Loop):
            yield from walk(s.header)
            yield from walk(s.body)


def file_of(ir: KernelIR, stmt) -> str:
    """The file a statement came from: an inlined helper's own file (set by the lowering on the
    statements it inlines), else the kernel's. Refusals name it with the statement's line."""
    return getattr(stmt, "file", None) or ir.file
