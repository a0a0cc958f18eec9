"""What Engine.launch's per-call-site cache compares: a description of the launch arguments that
determines everything the launch derives from them.

Classification (types, dtypes, layouts, activities, batch width), the aliasing and layout checks
(which memory each array covers) and the packed kernel arguments (pointer, shape, strides, scalar
values) are all functions of, per argument: the annotation's class and, for each value inside it,
its type and either its value (numbers) or its dtype, shape, strides and data pointer (arrays). Two
calls with equal descriptions therefore classify, check and pack identically, whichever Python
objects carry the arrays: the description holds no object identity (no id(), no reference to the
caller's arrays), so a freed array whose memory is reused by a new one of the same geometry packs
exactly as the cached launch does.

A value the description cannot capture (an unknown object) makes the whole call uncacheable.
"""
from __future__ import annotations

import numpy as np

from ..core.activity import Active, BatchDuplicated, Const, Duplicated

_NUMBERS = (bool, int, float)


def _data_pointer(value) -> int | None:
    if isinstance(value, np.ndarray):
        return value.__array_interface__["data"][0]
    ptr = getattr(getattr(value, "data", None), "ptr", None)      # cupy: value.data.ptr
    if isinstance(ptr, int):
        return ptr
    face = getattr(value, "__cuda_array_interface__", None)
    return int(face["data"][0]) if face else None


def value_key(value):
    """(type, number) for scalars, (type, dtype, shape, strides, pointer) for arrays, recursively
    for tuples and lists; None when the value is none of these."""
    t = type(value)
    if t in _NUMBERS or isinstance(value, np.generic):
        return t, value
    if t is tuple or t is list:
        keys = tuple(value_key(v) for v in value)
        return None if any(k is None for k in keys) else (t, keys)
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    ptr = _data_pointer(value)
    if ptr is None:
        return None
    return t, value.dtype, tuple(shape), tuple(value.strides), ptr


def _parts(annotation) -> tuple:
    t = type(annotation)
    if issubclass(t, Duplicated):
        return annotation.value, annotation.shadow
    if t is BatchDuplicated:
        return annotation.value, tuple(annotation.shadows)
    if t is Active:
        return annotation.value, annotation.tangent
    if t is Const:
        return (annotation.value,)
    return None


def fingerprint(args) -> tuple | None:
    """The description of a call's arguments, or None when some argument cannot be described."""
    out = []
    for a in args:
        parts = _parts(a)
        if parts is None:                     # a bare value: Const
            k = value_key(a)
            if k is None:
                return None
            out.append(k)
            continue
        keys = tuple(value_key(v) for v in parts)
        if any(k is None for k in keys):
            return None
        out.append((type(a),) + keys)
    return tuple(out)
