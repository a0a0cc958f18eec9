"""The lowering's one dispatch table: AST node type -> the function that lowers such a node.

Each lowering module registers its handlers here (`@lowers(ast.If)` beside the handler) and
recurses only through `statement`, `block` and `expression`, so the modules that lower
statements, expressions, loops, calls and inlined helpers import each other one way only
(statements -> calls -> inlined helpers -> expressions), never in a cycle. A statement's handler is `(state, node, out) -> None`; an expression's is
`(state, node, out) -> atom`. Statement and expression node types are disjoint, so one table
holds both. normalize.py imports every registering module before it lowers anything.
"""
from __future__ import annotations

import ast
from typing import Callable

from harness.engine.ir.ssa import Assign, Prim
from harness.engine.frontend.lower_state import LoweringState
from harness.engine.frontend.numba_limits import numba_refusal

# process-wide: filled by the lowering modules' decorators when they are imported, never by a session
LOWERERS: dict[type, Callable] = {}
REST_OF_BLOCK: list[Callable] = []


def lowers(*node_types: type):
    """Register the decorated function as the lowering of these AST node types."""
    def register(handler: Callable) -> Callable:
        for node_type in node_types:
            if node_type in LOWERERS:
                raise ValueError(f"{node_type.__name__} already lowered by {LOWERERS[node_type].__qualname__}")
            LOWERERS[node_type] = handler
        return handler
    return register


def _handler(node) -> Callable | None:
    for cls in type(node).__mro__:         # as isinstance would: a subclass lowers like its base
        if cls in LOWERERS:
            return LOWERERS[cls]
    return None


def block(st: LoweringState, stmts: list) -> list:
    out = []
    for k, s in enumerate(stmts):
        st.line = s.lineno
        if any(takes_over(st, s, stmts[k + 1:], out) for takes_over in REST_OF_BLOCK):
            break
        statement(st, s, out)
    return out


def lowers_rest_of_block(handler: Callable) -> Callable:
    """Register `handler(state, stmt, rest, out) -> bool`: True when it lowered `stmt` together
    with the rest of its block (a name bound to an array does: lower_stmts.bind_array)."""
    REST_OF_BLOCK.append(handler)
    return handler


TUPLE_VALUE: list[Callable] = []


def lowers_tuple_values(handler: Callable) -> Callable:
    """Register `handler(state, node, out) -> list | None`, the components of a tuple-valued
    expression (lower_stmts.tuple_value); the expressions' lowering reads `f(...)[k]` through it."""
    TUPLE_VALUE[:] = [handler]
    return handler


def tuple_value(st: LoweringState, node, out):
    return TUPLE_VALUE[0](st, node, out)


def statement(st: LoweringState, s, out) -> None:
    handler = _handler(s)
    if handler is None:
        raise unsupported_statement(st, s)
    handler(st, s, out)


def unsupported_statement(st: LoweringState, s):
    return st.err(s, numba_refusal(s) or f"{type(s).__name__} statements are not supported by the AD transform")


def expression(st: LoweringState, node, out, target: str | None = None):
    """Lower an expression; return its atom. With `target`, the value lands in that name."""
    atom = lower_expression(st, node, out)
    if target is None:
        return atom
    if out and isinstance(out[-1], Assign) and out[-1].target == atom and atom in st.temps:
        out[-1].target = target                   # rename the last temp instead of copying
        st.types[target] = st.types.pop(atom)
        return target
    st.emit_assign(out, target, Prim("copy", (atom,)))
    return target


def lower_expression(st: LoweringState, node, out):
    """An expression's atom, always in a fresh temporary or a literal (no target renaming)."""
    st.line = getattr(node, "lineno", st.line)
    handler = _handler(node)
    if handler is None:
        raise st.err(node, numba_refusal(node) or f"expression `{ast.unparse(node)}` is not supported by the AD transform")
    return handler(st, node, out)
