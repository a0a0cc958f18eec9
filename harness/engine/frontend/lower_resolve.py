"""Resolving names in a kernel's source during lowering: dotted module attributes (`cuda.threadIdx.x`,
`math.pi`), integer literals where the language needs one, and what a call calls (a rule, a CUDA
intrinsic, a device function, device-side autodiff, an activity). Reads the lowering's state,
lowers nothing.
"""
from __future__ import annotations

import ast
import types

import numpy as np

from harness.engine.frontend import desugar
from harness.engine.frontend.desugar import dtype_name
from harness.engine.frontend.source import FUNCTIONS, constant, module_kind, python_function, resolve_global
from harness.engine.frontend.lower_local_functions import ConditionalFunction
from harness.engine.frontend.lower_state import LoweringState
from harness.engine.rules.rng import random_function


def array_dtype(st: LoweringState, node) -> str | None:
    """The dtype name of the array that `a.dtype` reads (an argument or an allocated array), else
    None. It is known when the kernel compiles: each dtype the kernel runs at is its own compile."""
    if isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name) \
            and node.value.id in st.arrays and node.value.id not in st.env:
        return st.params[st.arrays[node.value.id]].dtype
    return None


def resolve_call(st: LoweringState, node):
    """('rule', name) | ('cuda', 'cuda.x') | ('random', name) | ('device', fn) | ('autodiff', None) |
    ('activity', cls). 'random': a device function of numba.cuda.random (rules/rng.py)."""
    f = node.func
    obj = None
    if isinstance(f, ast.Attribute) and f.attr == "type" and array_dtype(st, f.value):
        return "rule", f"cast_{array_dtype(st, f.value)}"      # `a.dtype.type(v)`: v cast to a's dtype
    if isinstance(f, ast.Attribute):
        d = dotted(st, f)
        if d is None:
            obj = user_module_attribute(st, f)      # `formal_integral_cuda.calculate_z_cuda(...)`
        else:
            kind, parts, mod = d
            if kind == "cuda":
                drawn = random_function(_attribute_object(st, f))   # `cuda.random.xoroshiro128p_uniform_float32(...)`
                return ("random", drawn) if drawn else ("cuda", "cuda." + ".".join(parts))
            obj = mod
            for p in parts:
                obj = getattr(obj, p, None)
    elif isinstance(f, ast.Name):
        if f.id in st.env or f.id in st.arrays:
            return None
        if f.id in st.local_functions:          # an inner function (lower_local_functions.py)
            fn = st.local_functions[f.id]
            if isinstance(fn, ConditionalFunction):
                raise st.err(node, f"inner function {f.id} is defined inside a branch or loop (line {fn.line}): "
                             "which definition a call after that block runs depends on the path taken; define "
                             "it before the block")
            return "device", fn
        try:
            obj = resolve_global(st.src, f.id)
        except KeyError:
            return None
    if obj is None:
        return None
    drawn = random_function(obj)
    if drawn:
        return "random", drawn
    name = FUNCTIONS.get(id(obj))
    if name is None and type(obj).__module__.startswith("numba.core.types"):
        name = f"cast_{obj}"              # numba.float32(x) and friends
    if name is not None:
        return "rule", name
    from harness.core import activity
    from harness.engine import device
    if obj is device.autodiff:
        return "autodiff", None
    if isinstance(obj, type) and issubclass(obj, (activity.Const, activity.Duplicated, activity.Active)):
        return "activity", obj
    try:
        return "device", python_function(obj)
    except TypeError:
        return None


def _dotted_base(st: LoweringState, node):
    """(the module-level object a dotted name starts from, the attribute names after it in order)
    for `numba.cuda.random.f`; None when the base is a local name or not defined."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id in st.env:
        return None
    try:
        return resolve_global(st.src, node.id), parts[::-1]
    except KeyError:
        return None


def _attribute_object(st: LoweringState, node):
    """The object a dotted name (`numba.cuda.random.f`) names in the kernel's module, or None."""
    base = _dotted_base(st, node)
    if base is None:
        return None
    obj, parts = base
    for p in parts:
        obj = getattr(obj, p, None)
    return obj


def user_module_attribute(st: LoweringState, node):
    """What `module.name` names when `module` is another Python module the kernel's module imported
    (`import pkg.formal_integral_cuda as formal_integral_cuda`, `from . import core`): numba resolves
    such attributes when it compiles, as it does the module's own globals. None when the base is not
    a module, or is one of the modules the lowering knows by name (cuda, math, numpy, numba)."""
    base = _dotted_base(st, node)
    if base is None or not isinstance(base[0], types.ModuleType) or module_kind(base[0]) is not None:
        return None
    obj, parts = base
    for p in parts:
        obj = getattr(obj, p, None)
    return obj


def dotted(st: LoweringState, node):
    """('cuda', ['threadIdx', 'x']) for cuda.threadIdx.x; None if the base is no module."""
    base = _dotted_base(st, node)
    if base is None:
        return None
    obj, parts = base
    kind = module_kind(obj)
    if kind is None:
        return None
    if kind == "numba" and parts and parts[0] == "cuda":
        kind, parts = "cuda", parts[1:]
    return kind, parts, obj


def literal_int(st: LoweringState, node) -> int:
    v = constant_int(st, node)
    if v is None:
        raise st.err(node, f"`{ast.unparse(node)}` must be an integer literal here")
    return v


def constant_int(st: LoweringState, node) -> int | None:
    """The integer a constant index spells, else None: a literal, a module constant or a constant
    expression over them (`TPB - 1`), or an integer type applied to one (`types.uint32(0)`,
    `np.int32(1)`, `int(2)`, as sgkit writes its positions): numba folds each to that number where a
    constant is needed (a tuple position, a dimension, a step)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        kind = desugar.resolve_dotted(node.func, st.src.globals, desugar.local_names(st.src.tree))
        name = "int64" if kind is int else dtype_name(node.func, st.src.globals,
                                                      desugar.local_names(st.src.tree))
        inner = constant_int(st, node.args[0])
        if name is None or inner is None or np.dtype(name).kind not in "iu":
            return None
        return int(np.array(inner).astype(name))            # the cast's wrap-around, as numba's
    v = constant(st.src, node)
    return int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) else None


def is_call_to(st: LoweringState, node, kind, name) -> bool:
    if not isinstance(node, ast.Call):
        return False
    d = dotted(st, node.func) if isinstance(node.func, ast.Attribute) else None
    return bool(d) and d[0] == kind and d[1] == [name]
