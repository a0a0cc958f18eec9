"""Front end: find a kernel's source, parse it, normalise it, and resolve the names it uses.

The one way to read a kernel, for the engine and for the adapters' translator alike:
`parse_kernel(kernel) -> KernelSource`, whose `tree` is the function's definition in the normal
form of desugar.py (the everyday numba.cuda dialect rewritten into its core forms, every node at
its source line) and whose `source_tree` is the definition as written. `constant(src, node)` and
`dtype(src, node)` resolve module constants and array dtypes the way the normal form does.

Names are resolved against the kernel's own module globals, by identity, so `import math`,
`from math import sin`, `import numpy as np` and `np.sin` all reach the same rule.
"""
from __future__ import annotations

import ast
import inspect
import math
import textwrap
import types
from dataclasses import dataclass

import numpy as np

from ..core.errors import UnsupportedError
from . import desugar

# Math functions by the object that implements them on the host; the rule table uses these names.
_MATH_NAMES = [
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "erf", "erfc", "fabs", "floor",
    "ceil", "trunc", "atan2", "hypot", "pow", "copysign", "fmod", "lgamma", "exp2", "cbrt",
    "degrees", "radians", "remainder", "nextafter", "ldexp", "gamma", "frexp", "modf",
    "isnan", "isinf", "isfinite",
]
_NUMPY_ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
                  "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "absolute": "fabs",
                  "power": "pow", "maximum": "max", "minimum": "min", "fmax": "max", "fmin": "min",
                  "deg2rad": "radians", "rad2deg": "degrees", "remainder": "mod", "mod": "mod"}
# math functions whose numpy namesake computes something else: np.remainder is Python's floored %,
# math.remainder the IEEE remainder (x - n y with n the nearest integer to x / y)
_NOT_NUMPY = {"remainder"}


def _function_table() -> dict[int, str]:
    table = {}
    for name in _MATH_NAMES:
        if hasattr(math, name):
            table[id(getattr(math, name))] = name
        if hasattr(np, name) and name not in _NOT_NUMPY:
            table[id(getattr(np, name))] = name
    for np_name, name in _NUMPY_ALIASES.items():
        table[id(getattr(np, np_name))] = name
    table[id(abs)] = "abs"
    table[id(min)] = "min"
    table[id(max)] = "max"
    table[id(np.abs)] = "fabs"
    table[id(round)] = "round"
    table[id(pow)] = "pow"
    table[id(float)] = "cast_float64"
    table[id(int)] = "cast_int64"
    table[id(bool)] = "cast_bool"
    for dt in ("float16", "float32", "float64", "int32", "int64", "uint32", "uint64", "int8", "int16"):
        table[id(getattr(np, dt))] = f"cast_{dt}"
    return table


FUNCTIONS = _function_table()


@dataclass
class KernelSource:
    name: str
    file: str                   # absolute path of the defining file
    tree: ast.FunctionDef       # the normal form (desugar.py); line numbers are the file's own
    globals: dict
    source_tree: ast.FunctionDef | None = None   # the definition as written

    @property
    def params(self) -> list[str]:
        return [a.arg for a in self.tree.args.args]

    def unsupported(self, node: ast.AST | None, what: str) -> UnsupportedError:
        return UnsupportedError(what, file=self.file, line=getattr(node, "lineno", self.tree.lineno))


def python_function(kernel):
    """The plain Python function behind a kernel (a cuda.jit dispatcher or simulator kernel too)."""
    for attr in ("py_func", "fn", "__wrapped__"):
        inner = getattr(kernel, attr, None)
        if isinstance(inner, types.FunctionType):
            return inner
    if isinstance(kernel, types.FunctionType):
        return kernel
    raise TypeError(f"{kernel!r} is not a Python kernel function")


def parse_kernel(kernel) -> KernelSource:
    fn = python_function(kernel)
    file = inspect.getsourcefile(fn)
    lines, first = inspect.getsourcelines(fn)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise UnsupportedError(f"{fn.__name__} is not a plain function definition", file=file, line=first)
    a = fdef.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise UnsupportedError("kernels take plain positional parameters only (no defaults, *args or **kw)",
                               file=file, line=fdef.lineno)
    return KernelSource(fn.__name__, file, desugar.normalise(fdef, fn.__globals__), fn.__globals__, fdef)


def constant(src: KernelSource, node):
    """The value of a constant expression over literals and the module's constants (`TPB * 2`,
    `(TPB, 4)`), or None: names the kernel assigns are never constants."""
    return desugar.constant_value(node, src.globals, desugar.local_names(src.tree))


def dtype(src: KernelSource, node) -> str | None:
    """The numpy dtype name an array dtype spells (`float32`, `numba.float32`, `np.float32`,
    `'float32'`), or None."""
    return desugar.dtype_name(node, src.globals, desugar.local_names(src.tree))


def module_kind(obj) -> str | None:
    """'cuda', 'math', 'numpy' or 'numba' for the modules kernels may name; None otherwise."""
    if not isinstance(obj, types.ModuleType):
        return None
    name = obj.__name__
    if name.startswith("numba.cuda"):
        return "cuda"
    if name == "math":
        return "math"
    if name == "numpy":
        return "numpy"
    if name == "numba":
        return "numba"
    return None


def resolve_global(src: KernelSource, name: str):
    if name in src.globals:
        return src.globals[name]
    import builtins
    if hasattr(builtins, name):
        return getattr(builtins, name)
    raise KeyError(name)
