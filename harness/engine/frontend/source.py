"""Front end: find a kernel's source, parse it, normalise it, and resolve the names it uses.

The one way to read a kernel, for the engine and for the adapters' translator alike:
`parse_kernel(kernel) -> KernelSource`, whose `tree` is the function's definition in the normal
form of desugar.py (the everyday numba.cuda dialect rewritten into its core forms, every node at
its source line) and whose `source_tree` is the definition as written. `constant(src, node)` and
`dtype(src, node)` resolve module constants and array dtypes the way the normal form does.

Names are resolved against the kernel's own module globals (and the variables it closes over, when
a factory function made it), by identity, so `import math`, `from math import sin`,
`import numpy as np` and `np.sin` all reach the same rule.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math
import textwrap
import types
from dataclasses import dataclass

import numpy as np

from harness.core.errors import UnsupportedError
from harness.engine.frontend import desugar
from harness.engine.frontend.python_functions import python_function  # noqa: F401  (read from here too)
from harness.engine.rules.ops import OPS

def _function_table() -> dict[int, str]:
    """id(host object) -> the op it calls: `math.<name>` and numpy's namesake, numpy's other names,
    the builtins and the numpy and builtin casts (the op table, ops.py, says which op has which)."""
    table = {}
    for op in OPS:
        if op.math:
            if hasattr(math, op.name):
                table[id(getattr(math, op.name))] = op.name
            if hasattr(np, op.name) and op.numpy_namesake:
                table[id(getattr(np, op.name))] = op.name
    for op in OPS:
        for np_name in op.numpy:
            table[id(getattr(np, np_name))] = op.name
    for op in OPS:
        if op.builtin:
            table[id(getattr(builtins, op.name))] = op.name
    table[id(np.abs)] = "fabs"
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


def parse_kernel(kernel) -> KernelSource:
    fn = python_function(kernel)
    file = inspect.getsourcefile(fn)
    try:
        lines, first = inspect.getsourcelines(fn)
    except OSError:
        raise UnsupportedError(f"the source of {fn.__name__} cannot be found (a kernel must be defined in a "
                               "file)", file=file, line=fn.__code__.co_firstlineno) from None
    fdef = _definition(fn, "".join(lines), first)
    if fdef is None:
        raise UnsupportedError(f"{fn.__name__} is not a plain function definition", file=file, line=first)
    a = fdef.args
    # trailing defaults are allowed (`def f(x, corot=0)`): a call that leaves them out is completed
    # from the function's own default values (lower_inline.with_module_defaults)
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        raise UnsupportedError("kernels take plain positional parameters only (no *args, **kw or keyword-only "
                               "parameters)", file=file, line=fdef.lineno)
    name = fdef.name if fn.__name__ == "<lambda>" else fn.__name__      # a lambda's name is no identifier
    names = visible_names(fn)
    return KernelSource(name, file, desugar.normalise(fdef, names), names, fdef)


def visible_names(fn) -> dict:
    """The names a function's body reads from outside: its module's globals, and for a function
    made by another (a kernel a factory defines) the enclosing function's variables it closes
    over, which shadow globals as in Python. numba.cuda freezes those into the kernel as
    constants when it compiles, so a tile size held by the factory sizes a shared array."""
    if not fn.__closure__:
        return fn.__globals__
    names = dict(fn.__globals__)
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__):
        try:
            names[var] = cell.cell_contents
        except ValueError:                  # a cell not yet filled: the name stays unresolved
            names.pop(var, None)
    return names


def constant(src: KernelSource, node):
    """The value of a constant expression over literals and the module's constants (`TPB * 2`,
    `(TPB, 4)`), or None: names the kernel assigns are never constants."""
    return desugar.constant_value(node, src.globals, desugar.local_names(src.tree))


def dtype(src: KernelSource, node) -> str | None:
    """The numpy dtype name an array dtype spells (`float32`, `numba.float32`, `np.float32`,
    `'float32'`), or None."""
    return desugar.dtype_name(node, src.globals, desugar.local_names(src.tree))


def _definition(fn, text: str, first: int) -> ast.FunctionDef | None:
    """The function's definition from its source lines: a `def`, or a lambda (`fn = lambda a, b:
    a + b`, numba's own reduce example) as the `def` it equals. None when neither is found."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:                       # a lambda inside a longer expression: its line alone
        try:
            tree = ast.parse(textwrap.dedent(text.splitlines()[0]).strip().rstrip(",(["))
        except SyntaxError:
            return None
    ast.increment_lineno(tree, first - 1)
    if tree.body and isinstance(tree.body[0], ast.FunctionDef):
        return tree.body[0]
    params = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and [a.arg for a in n.args.args] == params]
    if fn.__name__ != "<lambda>" or len(lambdas) != 1:
        return None
    lam = lambdas[0]
    body = [ast.copy_location(ast.Return(lam.body), lam.body)]
    fdef = ast.FunctionDef("_lambda", lam.args, body, [], None)
    fdef.type_params = []                     # Python 3.12's field; harmless before
    return ast.fix_missing_locations(ast.copy_location(fdef, lam))


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
