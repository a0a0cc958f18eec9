"""Which precision a kernel really computes in, read from its source.

A kernel with float64 arguments may still compute in float32 (`float32(x[i])`, `np.float32`,
`numba.float32`): its float64 evaluation for finite differences then carries float32 roundoff,
and the oracles must step and tolerate as for float32. Parsing, not running: the
kernel and the module-level functions it calls (device helpers) are scanned for float32 names.
"""
from __future__ import annotations

import ast
import inspect
import sys
import textwrap

FLOAT32_NAMES = frozenset({"float32", "f4", "single"})


def _function_tree(fn) -> ast.FunctionDef | None:
    fn = getattr(fn, "py_func", fn)                      # a numba dispatcher wraps the Python function
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)


def casts_to_float32(fn, _seen: set | None = None) -> bool:
    """True when `fn`, or a function of its module that it calls, names a float32 type."""
    from harness.adapters.native import declares_float32, is_native
    if is_native(fn):                  # a Warp or Taichi kernel declares its precision
        return declares_float32(fn)
    seen = set() if _seen is None else _seen
    fn = getattr(fn, "py_func", fn)
    if id(fn) in seen:
        return False
    seen.add(id(fn))
    tree = _function_tree(fn)
    if tree is None:
        return False
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    scope = dict(vars(module)) if module else {}
    scope.update(getattr(fn, "__globals__", {}))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in FLOAT32_NAMES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in FLOAT32_NAMES:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            callee = scope.get(node.func.id)
            if callable(callee) and getattr(getattr(callee, "py_func", callee), "__module__", None) \
                    == getattr(fn, "__module__", None) and casts_to_float32(callee, seen):
                return True
    return False


def run_precisions(dtype: str, kernels) -> tuple[str, str]:
    """(the precision tolerances follow, the precision finite differences step for) of a run whose
    arguments are `dtype`. A kernel that computes in float32 inside (it names float32: casts, float32
    shared tiles, a float32 accumulator) rounds to float32 even in the float64 evaluation finite
    differences use, whatever its arguments' dtype, so both follow float32; otherwise tolerances
    follow the arguments and FD steps float64 (primal64 recasts float32 arguments to float64)."""
    if any(casts_to_float32(k) for k in kernels):
        return "float32", "float32"
    return dtype, "float64"
