"""The adapters' refusal of numba's random number generator (numba.cuda.random): neither Warp nor
Taichi has xoroshiro128p states, so no translation draws the numbers the kernel draws
(harness/adapters/limits.py, row `rng`). The refusal names the first draw in the kernel or in a
device function it calls, found before any argument is unpacked (the states' record dtype has no
counterpart in either system)."""
from __future__ import annotations

import ast

from harness.adapters.limits import refusal
from harness.core.errors import UnsupportedError
from harness.core.rng_states import STATE_DTYPE_NAME
from harness.engine.frontend.source import parse_kernel, python_function, resolve_global
from harness.engine.rules.rng import random_function


def refuse_generator_states(kernel, infos, system: str) -> None:
    """Raise the `rng` refusal when an argument is an array of generator states."""
    states = [i for i in infos if i.kind == "array" and i.dtype == STATE_DTYPE_NAME]
    if not states:
        return
    found = _first_random_call(kernel, set())
    if found is None:
        raise refusal("rng", system, f"argument {states[0].position} ('{states[0].name}') is an array of "
                      "numba's generator states")
    file, line, name = found
    raise refusal("rng", system, f"{name}(...) draws from numba's generator", file=file, line=line)


def _first_random_call(fn, seen: set):
    """(file, line, function name) of the first call of a numba.cuda.random function in `fn` or in
    a device function it calls, in source order; None if there is none."""
    try:
        fn = python_function(fn)
        src = parse_kernel(fn)
    except (TypeError, UnsupportedError, OSError):
        return None
    if fn in seen:
        return None
    seen.add(fn)
    calls = sorted((n for n in ast.walk(src.source_tree or src.tree) if isinstance(n, ast.Call)),
                   key=lambda n: (n.lineno, n.col_offset))
    for node in calls:
        obj = _resolve(src, node.func)
        name = random_function(obj) if obj is not None else None
        if name:
            return src.file, node.lineno, name
        if obj is not None and (hasattr(obj, "py_func") or callable(obj)) and not isinstance(obj, type):
            inner = _first_random_call(obj, seen)
            if inner:
                return inner
    return None


def _resolve(src, node):
    if isinstance(node, ast.Name):
        try:
            return resolve_global(src, node.id)
        except KeyError:
            return None
    if isinstance(node, ast.Attribute):
        base = _resolve(src, node.value)
        return getattr(base, node.attr, None) if base is not None else None
    return None
