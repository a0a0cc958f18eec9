"""Scalar type inference for SSA values, following numba's promotion rules closely enough.

The engine only needs types to (a) decide which values are differentiable (floats) and (b) give
adjoint and tangent registers the right precision. A slightly wrong guess costs speed (a float64
register where float32 would do), never correctness: numba retypes the generated code itself.
"""
from __future__ import annotations

import numpy as np

from harness.engine.rules.table import BOOLEAN

FLOATS = ("float32", "float64")
_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne", "not", "cast_bool"}
_INT_ONLY = {"bitand", "bitor", "bitxor", "lshift", "rshift", "invert", "trunc_int",
             "threadfence", "threadfence_block", "threadfence_system"}   # fences: no value, never differentiated
_PRESERVING = {"copy", "neg", "abs", "min", "max", "add", "sub", "mul", "mod", "floordiv"}


def literal_type(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    return "float64"


def is_float(t: str) -> bool:
    return t in FLOATS


def is_int(t: str) -> bool:
    return t == "bool" or np.issubdtype(np.dtype(t), np.integer)


def promote(types: list[str]) -> str:
    """numpy/numba scalar promotion (bool counts as an integer in arithmetic)."""
    t = [("int64" if x == "bool" else x) for x in types]
    return str(np.result_type(*[np.dtype(x) for x in t]))


def promote_pair(a: str, b: str) -> str:
    """The type a variable holds when it is assigned values of types a and b (e.g. a loop register)."""
    if a == b:
        return a
    return promote([a, b])


def infer_prim_type(op: str, arg_types: list[str]) -> str:
    if op in _COMPARE or op in BOOLEAN:
        return "bool"
    if op == "round":                     # round(x) is an integer, round(x, n) a float
        return "int64" if len(arg_types) == 1 else promote(arg_types[:1] + ["float32"])
    if op.startswith("cast_"):
        return op[len("cast_"):]
    if op in _INT_ONLY:
        return "int64"
    if op in _PRESERVING:
        return arg_types[0] if op == "copy" else promote(arg_types)
    if op == "div":
        return promote(arg_types + ["float64"]) if all(is_int(t) for t in arg_types) else promote(arg_types)
    if op == "pow":
        if all(is_int(t) for t in arg_types):
            return "int64"
        return promote(arg_types)
    # math functions: float32 in, float32 out; integers become float64
    floats = [t for t in arg_types if is_float(t)]
    if floats and all(t == "float32" for t in floats) and len(floats) == len(arg_types):
        return "float32"
    return "float64"
