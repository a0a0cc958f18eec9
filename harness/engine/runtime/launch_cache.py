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

from harness.core.activity import Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed

_NUMBERS = (bool, int, float)


def value_key(value):
    """(type, number) for scalars, (type, dtype, shape, strides, pointer) for arrays, recursively
    for tuples and lists; None when the value is none of these. How to describe a value is decided
    once per type (a launch's arguments are a few types seen millions of times)."""
    t = type(value)
    describe = _DESCRIBERS.get(t)
    if describe is None:
        describe = _DESCRIBERS.setdefault(t, _describer(t, value))
    return describe(value)


def _host_array(v):
    return np.ndarray, v.dtype, v.shape, v.strides, v.__array_interface__["data"][0]


def _sequence(v):
    keys = tuple(map(value_key, v))
    return None if None in keys else (type(v), keys)


def _interface_array(v):
    face = getattr(v, "__cuda_array_interface__", None)
    if not face:
        return None
    return type(v), v.dtype, tuple(v.shape), tuple(v.strides), int(face["data"][0])


def _describer(t, sample):
    """The describing function for values of type `t` (`sample` is one of them)."""
    if t is np.ndarray:
        return _host_array
    if t in _NUMBERS or issubclass(t, np.generic):
        return lambda v: (t, v)
    if t is tuple or t is list:
        return _sequence
    if isinstance(getattr(getattr(sample, "data", None), "ptr", None), int):    # cupy: data.ptr
        return lambda v: (t, v.dtype, v.shape, v.strides, v.data.ptr)
    return _interface_array


# a type -> how its values are described: keyed by the type, never by a value or its id (process-wide:
# a type's describer is fixed once the type exists, whichever session asks)
_DESCRIBERS: dict[type, object] = {}


# annotation class -> the values inside it (DuplicatedNoNeed is a Duplicated)
_PARTS = {Duplicated: lambda a: (a.value, a.shadow), DuplicatedNoNeed: lambda a: (a.value, a.shadow),
          BatchDuplicated: lambda a: (a.value, tuple(a.shadows)), Active: lambda a: (a.value, a.tangent),
          Const: lambda a: (a.value,)}


def fingerprint(args) -> tuple | None:
    """The description of a call's arguments, or None when some argument cannot be described."""
    out = []
    for a in args:
        t = type(a)
        parts = _PARTS.get(t)
        if parts is None:                     # a bare value: Const
            k = value_key(a)
        else:
            k = (t,) + tuple(map(value_key, parts(a)))
            if None in k:
                return None
        if k is None:
            return None
        out.append(k)
    return tuple(out)
