"""Write the broadcast front end's elementwise kernels as readable source files.

A generated kernel is a real Python file in the engine's content-hashed cache
(harness/engine/runtime/cache.py): numba, the simulator, tracebacks and the AD engine's own front end (which
parses kernel source) all need one. The file binds the user's scalar function and every folded
constant as module globals, through `resolve(reference)`:

    add = cuda.jit(device=True, inline="always")(resolve('file:/.../kernels/broadcast.py:add'))
    T = resolve('import:numpy:float64')        # operand 1 'T', folded

so the kernel body calls them by name (`out[i] = add(T, x[i])`). References are stable text where
the object has a stable name (`import:module:qualname`, `file:/abs/path.py:name`), so the same
broadcast produces the same file in every process; objects made at run time (a closure built in a
test) get an in-process label (`object:make.<locals>.closure#3`). `inline="always"` makes numba
inline the device function at the IR level: no separate device compilation (which would need a
CUDA driver, so the ptx tier could not compile it) and no call overhead.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import keyword
import math
import sys
import textwrap
import types as pytypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.engine.runtime.cache import load_function, write_module

# The names generated files resolve. The files are process-wide (content-hashed in the engine's
# cache and imported once per process), so the names in them are too: an append-only table of
# references, never a cache of a session's results (those live in each launcher, per engine).
_REGISTRY: dict[str, Any] = {}
_counter = itertools.count(1)


# ----------------------------------------------------------------------------- references

def reference(obj: Any) -> str:
    """A textual reference to `obj` that `resolve` turns back into it (registered in-process)."""
    ref = _stable_reference(obj)
    if ref is None:                    # a run-time object keeps the label it was given first
        ref = next((r for r, known in _REGISTRY.items() if known is obj and r.startswith("object:")), None)
        if ref is None:
            label = getattr(obj, "__qualname__", None) or type(obj).__name__
            ref = f"object:{label}#{next(_counter)}"
    _REGISTRY[ref] = obj
    return ref


def resolve(ref: str) -> Any:
    """The object behind a reference written by `reference`."""
    if ref in _REGISTRY:
        return _REGISTRY[ref]
    kind, _, rest = ref.partition(":")
    if kind == "import":
        module, _, qual = rest.partition(":")
        return _getattr_chain(importlib.import_module(module), qual)
    if kind == "file":
        path, _, qual = rest.rpartition(":")
        return _getattr_chain(_load_file(path), qual)
    raise LookupError(f"{ref} was created at run time in another process; regenerate the kernel "
                      "through harness.broadcast.frontend instead of importing this file")


def _getattr_chain(obj, qual: str):
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def _load_file(path: str) -> pytypes.ModuleType:
    from harness.cases.inputs import import_file        # the module the case's own kernel came from
    return import_file(Path(path))


def _stable_reference(obj) -> str | None:
    if isinstance(obj, (type, np.ufunc, pytypes.BuiltinFunctionType)):
        module, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if isinstance(obj, np.ufunc):
            module, qual = "numpy", obj.__name__
        if module and qual and module in sys.modules:
            try:
                if _getattr_chain(sys.modules[module], qual) is obj:
                    return f"import:{module}:{qual}"
            except AttributeError:
                pass
        return None
    fn = python_function_or_none(obj)
    if fn is None:
        return None
    namespace = fn.__globals__
    names = [fn.__name__] + [k for k, v in namespace.items() if v is obj and k != fn.__name__]
    name = next((n for n in names if namespace.get(n) is obj), None)
    if name is None:
        return None
    module = sys.modules.get(namespace.get("__name__", ""))
    if module is not None and module.__dict__ is namespace:
        return f"import:{module.__name__}:{name}"
    file = namespace.get("__file__")
    if file:
        return f"file:{Path(file).resolve()}:{name}"
    return None


def python_function_or_none(obj) -> pytypes.FunctionType | None:
    """The Python function behind a plain function or a numba (or simulator) dispatcher."""
    if isinstance(obj, pytypes.FunctionType):
        return obj
    for attr in ("py_func", "fn"):
        inner = getattr(obj, attr, None)
        if isinstance(inner, pytypes.FunctionType):
            return inner
    return None


# ----------------------------------------------------------------------------- the kernel's shape

@dataclass(frozen=True)
class Operand:
    """One operand of f as the generated kernel sees it.

    kind: `array` (indexed by the broadcast index map), `scalar` (used as is), `folded` (a type or
    function compiled in as a module global), `value` (a type or function that fold_constants:
    false passes as a kernel parameter, used as is; the launch refuses it as non-isbits).
    `extruded[j]` is True where the operand's dimension j has size 1 and is always read at 0.
    """
    name: str
    kind: str
    ndim: int = 0
    extruded: tuple[bool, ...] = ()
    const: Any = field(default=None, compare=False)
    const_ref: str | None = None       # the folded constant's reference (part of the identity)


@dataclass(frozen=True)
class KernelSpec:
    function: Any = field(compare=False)
    function_ref: str
    style: str                         # broadcast | map
    dest: str
    dest_ndim: int
    operands: tuple[Operand, ...]
    packed: bool
    fold_constants: bool
    packed_name: str = "bc"


def _identifier(text: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in text).strip("_") or "f"
    if out[0].isdigit() or keyword.iskeyword(out):
        out = "f_" + out
    return out


def _unique(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken or keyword.iskeyword(name):
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name


def kernel_name(spec: KernelSpec) -> str:
    base = getattr(spec.function, "__name__", None) or type(spec.function).__name__
    return f"{_identifier(base)}__{spec.style}_{'packed' if spec.packed else 'split'}"


# ----------------------------------------------------------------------------- constant folding

_DEVICE = 'cuda.jit(device=True, inline="always")'
_SCOPES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp, ast.Global, ast.Nonlocal)


class _Globals:
    """The module globals of a generated file: every object the kernel uses, bound once by name.

    Plain functions become inlined device functions. A function that closes over variables, or
    that receives folded constants as arguments, is *specialized*: a copy of its source is written
    into the generated file with those variables and parameters bound to module globals, so the
    constants are compiled in and the copy sees nothing but globals (which is all that numba and
    the AD engine's front end resolve).
    """

    def __init__(self, taken: set[str]):
        from numba import cuda as cuda_module
        self.taken = taken
        self.lines: list[str] = []
        self.bound: list[tuple[Any, str]] = [(cuda_module, "cuda")]     # (object, its global name)

    def name_of(self, obj) -> str | None:
        """The global name `obj` is bound to in this file (found by identity), if any."""
        return next((name for known, name in self.bound if known is obj), None)

    def bind(self, obj, hint: str, comment: str = "") -> str:
        known = self.name_of(obj)
        if known is not None:
            return known
        fn = obj if isinstance(obj, pytypes.FunctionType) else None
        if fn is not None and fn.__closure__:
            special = self.specialize(fn, {}, hint)
            if special is not None:
                return special
        name = _unique(_identifier(hint), self.taken)
        self.bound.append((obj, name))
        suffix = f"        # {comment}" if comment else ""
        if isinstance(obj, pytypes.ModuleType):
            self.lines.append(f"import {obj.__name__} as {name}{suffix}")
        elif type(obj) in (bool, int) or (type(obj) is float and math.isfinite(obj)):
            self.lines.append(f"{name} = {obj!r}{suffix}")
        elif fn is not None:
            self.lines.append(f"{name} = {_DEVICE}(resolve({reference(obj)!r})){suffix}")
        else:                          # a type, a numpy scalar, a ufunc, an already compiled device function
            self.lines.append(f"{name} = resolve({reference(obj)!r}){suffix}")
        return name

    def specialize(self, fn: pytypes.FunctionType, consts: dict[str, Any], hint: str) -> str | None:
        """A copy of `fn` with `consts` (parameter -> value) and its captured variables bound to
        globals; None when fn's source cannot be specialized (the caller then calls fn itself)."""
        fdef = _function_def(fn)
        if fdef is None:
            return None
        params = [a.arg for a in fdef.args.args]
        stored = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        if any(p not in params or p in stored for p in consts):
            return None
        loaded = [n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ()))) \
            if _cells_filled(fn) else None
        if cells is None:
            return None
        captured = [v for v in fn.__code__.co_freevars if v in loaded]
        suffix = "_".join(_identifier(p) for p in (list(consts) or captured)) or "folded"
        name = _unique(f"{_identifier(fn.__name__)}__{suffix}", self.taken)
        if not consts:
            self.bound.append((fn, name))   # before the body: a self-reference resolves to the copy
        renames: dict[str, str] = {}
        import builtins
        for var in dict.fromkeys(loaded):
            if var in stored or (var in params and var not in consts):
                continue
            if var in consts:
                value = consts[var]
            elif var in cells:
                value = cells[var]
            elif var in fn.__globals__:
                value = fn.__globals__[var]
            elif hasattr(builtins, var):
                continue
            else:
                return None            # an undefined name: leave the error to numba
            what = "folded" if var in consts else ("captured" if var in cells else "global")
            renames[var] = self.bind(value, var, comment=f"{fn.__name__}: {var} ({what})")
        fdef = _Rename(renames).visit(fdef)
        fdef.name = name
        fdef.args.args = [a for a in fdef.args.args if a.arg not in consts]
        where = f"{inspect.getsourcefile(fn) or '?'}:{fn.__code__.co_firstlineno}"
        folded = ", ".join(f"{p} = {_short(v)}" for p, v in consts.items())
        captured = ", ".join(f"{v} = {_short(cells[v])}" for v in cells if v in renames)
        note = "; ".join(x for x in (f"folded {folded}" if folded else "",
                                     f"captured {captured}" if captured else "") if x)
        doc = ast.Expr(ast.Constant(f"{fn.__qualname__} ({where}), specialized: {note or 'no constants'}."))
        body = fdef.body[1:] if _has_docstring(fdef) else fdef.body
        fdef.body = [doc] + body
        self.lines += ["", f"@{_DEVICE}", ast.unparse(ast.fix_missing_locations(fdef)), ""]
        return name


class _Rename(ast.NodeTransformer):
    def __init__(self, renames: dict[str, str]):
        self.renames = renames

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.renames:
            return ast.copy_location(ast.Name(self.renames[node.id], ast.Load()), node)
        return node


def _function_def(fn) -> ast.FunctionDef | None:
    try:
        text = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(text)
    except (OSError, TypeError, SyntaxError):
        return None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__name__:
        return None
    a = fdef.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        return None
    if any(isinstance(n, _SCOPES) for stmt in fdef.body for n in ast.walk(stmt)):
        return None
    fdef.decorator_list = []           # evaluated where fn was defined, not part of its body
    fdef.returns = None                # and so are annotations
    for arg in a.args:
        arg.annotation = None
    return fdef


def _cells_filled(fn) -> bool:
    try:
        for c in fn.__closure__ or ():
            c.cell_contents
    except ValueError:
        return False
    return True


def _has_docstring(fdef) -> bool:
    first = fdef.body[0] if fdef.body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
        and isinstance(first.value.value, str)


def _short(value) -> str:
    if isinstance(value, type):
        return f"{_module_name(value)}.{value.__qualname__}"
    fn = python_function_or_none(value)
    if fn is not None:
        return fn.__qualname__
    return repr(value)


def _module_name(cls) -> str:
    module = getattr(cls, "__module__", "") or ""
    return "numpy" if module.startswith("numpy") else module


# ----------------------------------------------------------------------------- the kernel

def source(spec: KernelSpec) -> tuple[str, str]:
    """(kernel function name, module source) for an elementwise kernel."""
    members = [op for op in spec.operands if op.kind != "folded"]
    params = [spec.dest] + ([spec.packed_name] if spec.packed else [op.name for op in members])
    taken = set(params) | {"cuda", "resolve"}
    fname = kernel_name(spec)
    taken.add(fname)
    glob = _Globals(taken)

    # f with its folded operands bound: a specialized copy when f is a Python function, else a
    # call of f (a type, a compiled device function) with the folded constants as globals
    folded = {op.name: op.const for op in spec.operands if op.kind == "folded"}
    fn = python_function_or_none(spec.function)     # a plain function or a compiled device function
    callee = None
    if fn is not None and (folded or fn.__closure__):
        params_of_f = list(inspect.signature(fn).parameters)
        positional = {params_of_f[k]: op.const for k, op in enumerate(spec.operands)
                      if op.kind == "folded" and k < len(params_of_f)}
        if len(positional) == len(folded):
            callee = glob.specialize(fn, positional, fn.__name__)
    specialized = callee is not None
    if callee is None:
        callee = glob.bind(spec.function, getattr(spec.function, "__name__", "f"))
    folded_names = {}
    if not specialized:
        for pos, op in enumerate(spec.operands, start=1):
            if op.kind == "folded":
                folded_names[op.name] = glob.bind(op.const, op.name, comment=f"operand {pos} '{op.name}', folded")

    i = _unique("i", taken)
    dims = [_unique(f"i{d}", taken) for d in range(spec.dest_ndim)] if spec.dest_ndim > 1 else [i]
    rest = _unique("r", taken) if spec.dest_ndim > 2 else None
    body = [f"{i} = cuda.grid(1)", f"if {i} < {spec.dest}.size:"]
    inner = []
    if spec.dest_ndim > 1:               # unravel the flat thread index, last dimension fastest
        if rest:
            inner.append(f"{rest} = {i}")
            for d in range(spec.dest_ndim - 1, 0, -1):
                inner.append(f"{dims[d]} = {rest} % {spec.dest}.shape[{d}]")
                inner.append(f"{rest} = {rest} // {spec.dest}.shape[{d}]" if d > 1
                             else f"{dims[0]} = {rest} // {spec.dest}.shape[1]")
        else:
            inner.append(f"{dims[1]} = {i} % {spec.dest}.shape[1]")
            inner.append(f"{dims[0]} = {i} // {spec.dest}.shape[1]")

    member_index = {op.name: k for k, op in enumerate(members)}

    def access(op: Operand) -> str | None:
        if op.kind == "folded":
            return None if specialized else folded_names[op.name]
        base = f"{spec.packed_name}[{member_index[op.name]}]" if spec.packed else op.name
        if op.kind != "array":
            return base
        lead = spec.dest_ndim - op.ndim
        index = ["0" if op.extruded[j] else dims[lead + j] for j in range(op.ndim)]
        return f"{base}[{', '.join(index)}]"

    call_args = ", ".join(a for a in (access(op) for op in spec.operands) if a is not None)
    inner.append(f"{spec.dest}[{', '.join(dims)}] = {callee}({call_args})")
    body += ["    " + line for line in inner]

    described = ", ".join(f"{op.name}: {_describe(op)}" for op in spec.operands) or "none"
    launch = (f"packed (the operands travel as one tuple argument {spec.packed_name!r})" if spec.packed
              else "split (every operand is its own kernel argument)")
    doc = [
        # generated kernels carry this text: it keeps the module's path from before the layout change,
        # so that they stay byte-identical (change it together with the kernels it changes)
        "Elementwise kernel generated by harness.frontends.broadcast; do not edit.",
        "",
        f"{spec.style}: {spec.dest}[idx] = f(...) over {spec.dest}'s {spec.dest_ndim}-d shape"
        + (" (numpy broadcasting)" if spec.style == "broadcast" else " (operands of the same shape)"),
        f"f = {spec.function_ref}" + (f", specialized as {callee}" if specialized else ""),
        f"operands: {described}",
        f"launch: {launch}, fold_constants: {'true' if spec.fold_constants else 'false'}",
    ]
    lines = ['"""' + doc[0]] + doc[1:] + ['"""',
             "from numba import cuda", "",
             "from harness.frontends.kernelgen import resolve", ""] + glob.lines + ["", "",
             f"def {fname}({', '.join(params)}):"] + ["    " + b for b in body]
    text = "\n".join(lines) + "\n"
    while "\n\n\n\n" in text:
        text = text.replace("\n\n\n\n", "\n\n\n")
    return fname, text


def _describe(op: Operand) -> str:
    if op.kind == "array":
        pattern = "".join("1" if e else "n" for e in op.extruded)
        return f"{op.ndim}-d array" + (f" (dims {pattern}: 1 = broadcast)" if any(op.extruded) else "")
    if op.kind == "folded":
        return f"constant {op.const_ref}"
    if op.kind == "value":
        return "kernel parameter (not folded)"
    return "scalar"


def build(spec: KernelSpec) -> tuple[Any, str]:
    """(the generated kernel function, its source path), written to the content-hashed cache (a
    launcher keeps what it built, per spec)."""
    fname, text = source(spec)
    path = write_module(fname, text)
    return load_function(path, fname), str(path)
