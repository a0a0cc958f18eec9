"""The types a case may pass as a `type:` argument: one allow-list, shared by the loader (which
refuses any other name) and by harness.cases.inputs (which turns an allowed name into the object).

A `type:` value is never imported by name: it is looked up in this table, so no case file can reach
an arbitrary module or callable (`os._exit`, `time.sleep`). Only plain scalar types are listed.
"""
from __future__ import annotations

_SCALARS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64", "complex64", "complex128")

BUILTIN_TYPES = ("bool", "int", "float", "complex")
NUMPY_TYPES = ("bool_",) + _SCALARS
NUMBA_TYPES = ("boolean", "intp", "uintp") + _SCALARS

# name as written in a case -> (namespace, attribute). Namespaces: builtins, numpy, numba.types.
ALLOWED_TYPES: dict[str, tuple[str, str]] = {
    **{name: ("builtins", name) for name in BUILTIN_TYPES},
    **{f"numpy.{name}": ("numpy", name) for name in NUMPY_TYPES},
    **{f"numba.{name}": ("numba.types", name) for name in NUMBA_TYPES},
    **{f"numba.types.{name}": ("numba.types", name) for name in NUMBA_TYPES},
}


def describe_allowed() -> str:
    """One line for error messages."""
    return (f"allowed: {', '.join(BUILTIN_TYPES)}, numpy.<t> or numba.<t> with t a scalar type "
            f"such as float32, float64, int32, complex64 (numpy.bool_, numba.boolean)")
