"""`f(...)[k]`, one element of a device function's tuple result read in place, as named elements.

numba.cuda evaluates the call and takes element k. The engine's lowering reads it so directly
(lower_exprs.subscript_value); Warp cannot index a multi-value call (its parser fails on
`f(x)[1]`), so for the adapters' translator, which reads the same normal form, a statement run once
(an assignment, an augmented assignment, an expression statement, a `return`) is preceded by

    _tuple_L_C_0, ..., _tuple_L_C_{n-1} = f(...)      (L, C: the subscript's line and column)

and the subscript becomes `_tuple_L_C_k`. The call is evaluated as before, once, before the rest
of the statement. That is the only change of order, so a statement is left as written when
another call to a function of the kernel's module (which could write what the call reads, or read
what it writes) is in it, or when the subscript sits where it may not be evaluated (a branch of
`x if c else y`, an operand of `and`/`or`) or is evaluated repeatedly (a `while` test).

`(a, b, c)[k]`, an element of a tuple display, becomes that element wherever it is, unless another
element calls a function of the kernel's module (whose effects numba would run).
"""
from __future__ import annotations

import ast
import functools
import inspect
import textwrap

import numpy as np

from harness.engine.frontend.python_functions import python_function

_BUILTINS = {"abs", "min", "max", "float", "int", "bool", "round", "len", "range"}
_ONCE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)
_CONDITIONAL = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)


def hoist_tuple_elements(fn: ast.FunctionDef, globals_: dict, local: set[str]) -> None:
    """Rewrite `fn` in place as the module docstring says."""
    _LiteralElements(globals_, local).visit(fn)
    for node in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                setattr(node, field, [new for s in stmts for new in _hoisted(s, globals_, local)])


def _hoisted(s: ast.stmt, globals_, local) -> list[ast.stmt]:
    if not isinstance(s, _ONCE):
        return [s]
    found = [n for n in _evaluated_once(s) if _element_of_call(n, globals_, local)]
    if not found:
        return [s]
    hoisted = {id(n.value) for n in found}
    if any(isinstance(c, ast.Call) and id(c) not in hoisted and not _pure(c, globals_, local) for c in ast.walk(s)):
        return [s]                     # another call that may read or write memory: keep the order as written
    before, names = [], {}
    for n in found:
        arity = _tuple_arity(_module_function(n.value, globals_, local))
        stem = f"_tuple_{n.lineno}_{n.col_offset}"
        target = ast.Tuple([ast.Name(f"{stem}_{j}", ast.Store()) for j in range(arity)], ast.Store())
        before.append(ast.Assign([target], n.value))
        names[id(n)] = f"{stem}_{_position(n.slice) % arity}"
    for b in before:
        ast.copy_location(b, s)
        ast.fix_missing_locations(b)

    class Replace(ast.NodeTransformer):
        def visit_Subscript(self, node):
            if id(node) in names:
                return ast.copy_location(ast.Name(names[id(node)], ast.Load()), node)
            return self.generic_visit(node)
    return before + [Replace().visit(s)]


class _LiteralElements(ast.NodeTransformer):
    def __init__(self, globals_, local):
        self.globals, self.local = globals_, local

    def visit_Subscript(self, node):
        self.generic_visit(node)
        t, k = node.value, _position(node.slice)
        if not (isinstance(node.ctx, ast.Load) and isinstance(t, ast.Tuple) and k is not None
                and -len(t.elts) <= k < len(t.elts)):
            return node
        if any(isinstance(e, ast.Starred) for e in t.elts):
            return node
        if any(isinstance(c, ast.Call) and not _pure(c, self.globals, self.local)
               for j, e in enumerate(t.elts) if j != k % len(t.elts) for c in ast.walk(e)):
            return node                # a dropped element would have run a call (an atomic, a draw, ...)
        return t.elts[k]


def _evaluated_once(node):
    """The nodes of a statement evaluated exactly once when it runs (not under a conditional
    expression, a lambda or a comprehension)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _CONDITIONAL):
            continue
        yield child
        yield from _evaluated_once(child)


def _position(node) -> int | None:
    """The int a subscript's index spells (`1`, `-1`), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _position(node.operand)
        return None if inner is None else -inner
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _element_of_call(node, globals_, local) -> bool:
    if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Call)
            and _position(node.slice) is not None):
        return False
    arity = _tuple_arity(_module_function(node.value, globals_, local))
    return arity is not None and -arity <= _position(node.slice) < arity


def _pure(call: ast.Call, globals_, local) -> bool:
    """Whether a call only computes a number from its arguments: a builtin such as min or abs, a
    math function, a cast to a numba or numpy number type. Anything else (a device function, an
    atomic, a random draw, a method) may read or write memory."""
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id not in local:
        module = globals_.get(f.value.id)            # math.exp(x), numba.float32(x), np.float64(x)
        return getattr(module, "__name__", None) in ("math", "cmath") or \
            (getattr(module, "__name__", None) in ("numba", "numpy") and _is_number_type(getattr(module, f.attr, None)))
    if not isinstance(f, ast.Name) or f.id in local:
        return False
    obj = globals_.get(f.id)
    return f.id in _BUILTINS and obj is None or getattr(obj, "__module__", None) in ("math", "cmath") \
        or _is_number_type(obj)


def _is_number_type(obj) -> bool:
    """float32, numba.int64, np.float64 and the like (a cast when called)."""
    if isinstance(obj, type) and issubclass(obj, np.number):
        return True
    return type(obj).__module__.startswith("numba.core.types")


def _module_function(call: ast.Call, globals_, local):
    """The Python function a call by name reaches: a cuda.jit device function (numba's random
    draws, which advance their state, included) or a plain one; None for builtins, math functions
    (not Python functions) and casts (numba types)."""
    f = call.func
    if not isinstance(f, ast.Name) or f.id in local or f.id in _BUILTINS:
        return None
    try:
        return python_function(globals_.get(f.id))
    except TypeError:
        return None


@functools.lru_cache(maxsize=256)       # read for every f(...)[k] of every normalisation: parse each helper once
def _tuple_arity(fn) -> int | None:
    """n when every `return` of `fn` gives a tuple display of n >= 2 values; None otherwise."""
    if fn is None:
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    fdef = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if fdef is None:
        return None
    returns = [n for n in ast.walk(fdef) if isinstance(n, ast.Return)]
    sizes = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else None for r in returns}
    if len(sizes) != 1 or None in sizes or min(sizes) < 2:
        return None
    return sizes.pop()
