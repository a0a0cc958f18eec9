"""The plain Python function behind a kernel or device function, in a module of its own so that the
normal form (desugar, tuple_elements) and the source reader (source.py, which imports desugar) share
it without an import cycle."""
from __future__ import annotations

import types


def python_function(kernel):
    """The plain Python function behind a kernel (a cuda.jit dispatcher or simulator kernel too)."""
    for attr in ("py_func", "fn", "__wrapped__"):
        inner = getattr(kernel, attr, None)
        if isinstance(inner, types.FunctionType):
            return inner
    if isinstance(kernel, types.FunctionType):
        return kernel
    raise TypeError(f"{kernel!r} is not a Python kernel function")
