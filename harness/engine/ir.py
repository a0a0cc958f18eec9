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
    """t = op(args): arithmetic, comparison, math call or cast."""
    op: str                     # add, sub, mul, div, ..., lt, eq, not, sin, cast_float32, copy
    args: tuple[Atom, ...]


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


Stmt = Union[Assign, Store, If]


@dataclass
class Param:
    name: str
    kind: str                   # array | scalar
    dtype: str                  # numpy dtype name
    ndim: int = 0


@dataclass
class KernelIR:
    name: str
    file: str
    params: list[Param]
    body: list
    types: dict[str, str] = field(default_factory=dict)   # SSA var -> bool | int64 | float32 | float64

    def param(self, name: str) -> Param | None:
        for p in self.params:
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
