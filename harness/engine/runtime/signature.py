"""Classify launch arguments and check their activities before anything is compiled."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.activity import Active, BatchDuplicated, Const, Duplicated, activity_name
from harness.core.errors import ActivityError, KernelError, UnsupportedError
from harness.engine.rules import rng

_SCALAR_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)


@dataclass
class ArgInfo:
    position: int
    name: str
    kind: str                         # array | scalar
    dtype: str
    ndim: int
    layout: str                       # C | A (arrays only)
    activity: str
    value: Any
    shadows: tuple = ()               # arrays: shadow arrays; scalars (forward): tangents
    width: int = 1
    members: tuple = ()               # kind tuple: one ArgInfo per member (primal launches only)
    shadow_layouts: tuple = ()        # arrays: each shadow's own layout (C | A), never the primal's

    def shadow_layout(self, k: int) -> str:
        return self.shadow_layouts[k] if k < len(self.shadow_layouts) else self.layout

    @property
    def differentiable(self) -> bool:
        return self.activity != "const"

    def type_key(self) -> tuple:
        return (self.name, self.kind, self.dtype, self.ndim, self.layout, self.activity, self.shadow_layouts) + \
            tuple(m.type_key() for m in self.members)


def _scalar_dtype(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, np.generic):
        return str(value.dtype)
    if isinstance(value, int):
        return "int64"
    return "float64"


def describe_type(value) -> str:
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def classify(backend, params: list[str], args: tuple, mode: str) -> list[ArgInfo]:
    if len(args) != len(params):
        raise KernelError(f"kernel takes {len(params)} arguments ({', '.join(params)}) but {len(args)} were given")
    infos, widths = [], set()
    for pos, (name, ann) in enumerate(zip(params, args)):
        if not isinstance(ann, (Const, Duplicated, BatchDuplicated, Active)):
            ann = Const(ann)
        act = activity_name(ann)
        value = ann.value

        def fail(why, cls=ActivityError):
            return cls(f"argument {pos} ('{name}'): {why}", argument=pos, param=name)

        if backend.is_array(value):
            dtype = rng.dtype_name(value.dtype)
            info = ArgInfo(pos, name, "array", dtype, value.ndim, array_layout(value), act, value)
            if act == "active":
                raise fail("Active applies to scalars only; pass an array as Duplicated(x, dx)")
            if dtype == rng.STATE_DTYPE_NAME and act != "const":
                raise fail("an array of random number generator states cannot be differentiated (its draws "
                           f"are constants); mark '{name}' const")
            if np.dtype(value.dtype).fields is not None and dtype != rng.STATE_DTYPE_NAME:
                raise UnsupportedError(f"argument {pos} ('{name}') is an array of records ({value.dtype}): the only "
                                       "record arrays the engine passes are numba's xoroshiro128p generator states")
            if act != "const" and not np.issubdtype(np.dtype(dtype), np.floating):
                raise fail(f"{dtype} arrays cannot be differentiated; mark '{name}' const")
            if act != "const" and dtype == "float16":
                raise fail("float16 arrays cannot be differentiated (derivative registers are float32 or "
                           f"float64); pass '{name}' as float32, or mark it const")
            refuse_negative_strides(backend, value, fail)
            if act in ("duplicated", "duplicated_no_need"):
                info.shadows = (ann.shadow,)
            elif act == "batch_duplicated":
                info.shadows = tuple(ann.shadows)
                info.width = len(info.shadows)
            for k, sh in enumerate(info.shadows):
                if not backend.is_array(sh) or tuple(sh.shape) != tuple(value.shape) or str(sh.dtype) != dtype:
                    got = f"{describe_type(sh)} {getattr(sh, 'shape', '')} {getattr(sh, 'dtype', '')}".strip()
                    raise fail(f"shadow {k} must be a device array of shape {tuple(value.shape)} and dtype {dtype}; got {got}")
            # A shadow may be laid out unlike its primal (a Fortran-ordered gradient of a C-ordered
            # array): each is compiled with its own layout, or a kernel typed for a C-ordered shadow
            # would index a Fortran-ordered one as if it were C-ordered.
            for sh in info.shadows:
                refuse_negative_strides(backend, sh, fail, "its shadow")
            info.shadow_layouts = tuple(array_layout(sh) for sh in info.shadows)
        elif isinstance(value, _SCALAR_TYPES):
            dtype = _scalar_dtype(value)
            info = ArgInfo(pos, name, "scalar", dtype, 0, "", act, value)
            floating = np.issubdtype(np.dtype(dtype), np.floating) and dtype != "float16"
            if act != "const" and not floating:
                raise fail(f"{dtype} scalars cannot be differentiated; mark '{name}' const")
            if act == "batch_duplicated" or act == "duplicated_no_need":
                raise fail("a scalar is passed by value: use Active (or Duplicated in forward mode)")
            if act == "duplicated":
                if mode == "reverse":
                    raise fail("a scalar passed by value has no cotangent to write back: use Active in reverse mode")
                info.shadows = (ann.shadow,)
            if act == "active":
                tangent = ann.tangent
                info.shadows = tuple(tangent) if isinstance(tangent, (tuple, list)) else (tangent,)
        else:
            info = _other_argument(backend, pos, name, act, value, mode)
        if info.kind == "array" and info.activity != "const":
            widths.add(info.width)
        infos.append(info)
    if len(widths) > 1:
        raise ActivityError(f"differentiable arrays mix batch widths {sorted(widths)}: "
                            "with BatchDuplicated every differentiable array needs the same number of shadows")
    width = widths.pop() if widths else 1
    for info in infos:
        if info.kind == "scalar" and info.differentiable:
            if len(info.shadows) == 1 and width > 1:
                info.shadows = info.shadows * width
            if len(info.shadows) != width:
                raise ActivityError(f"argument {info.position} ('{info.name}'): {len(info.shadows)} tangents "
                                    f"for a batch of width {width}", argument=info.position, param=info.name)
            info.width = width
    return infos


def _other_argument(backend, pos: int, name: str, act: str, value, mode: str) -> ArgInfo:
    """Neither a device array nor a number: the isbits check (harness/engine/runtime/isbits.py) refuses it with a
    KernelError naming the nested offenders, or it is a tuple of isbits values (primal only)."""
    from harness.engine.runtime.isbits import check_argument
    kind = check_argument(pos, name, value, is_array=backend.is_array)
    where = f"argument {pos} ('{name}')"
    if kind == "tuple":
        if mode != "primal":
            raise UnsupportedError(f"{where} is a tuple: derivative launches take device arrays and scalars, "
                                   "each with its own activity; pass its members as separate arguments "
                                   "(for a broadcast: launch: split)")
        if act != "const":
            raise ActivityError(f"{where} is a tuple, which is always const in a primal launch (got {act})",
                                argument=pos, param=name)
        members = tuple(_member_info(backend, pos, f"{name}[{k}]", v) for k, v in enumerate(value))
        desc = "(" + ", ".join(m.dtype if m.kind != "array" else f"{m.dtype}[{m.ndim}d,{m.layout}]"
                               for m in members) + ")"
        return ArgInfo(pos, name, "tuple", desc, 0, "", act, value, members=members)
    if kind == "record":
        raise UnsupportedError(f"{where} is a numpy record: the engine passes device arrays, scalars and "
                               "tuples of them; pass the record's fields as separate arguments")
    # an array-like that is isbits but not this backend's device array, or a complex number
    raise KernelError(f"{where} is of type {describe_type(value)}, which this launcher cannot pass "
                      "(device arrays, real scalars and tuples of them only)", argument=pos, param=name)


def _member_info(backend, pos: int, name: str, value) -> ArgInfo:
    if backend.is_array(value):
        return ArgInfo(pos, name, "array", str(value.dtype), value.ndim, array_layout(value), "const", value)
    if isinstance(value, _SCALAR_TYPES):
        return ArgInfo(pos, name, "scalar", _scalar_dtype(value), 0, "", "const", value)
    if isinstance(value, tuple):
        members = tuple(_member_info(backend, pos, f"{name}[{k}]", v) for k, v in enumerate(value))
        return ArgInfo(pos, name, "tuple", "tuple", 0, "", "const", value, members=members)
    raise KernelError(f"argument {pos}: member {name} is of type {describe_type(value)}, which this "
                      "launcher cannot pass (device arrays, real scalars and tuples of them only)",
                      argument=pos, param=name.split("[")[0])


def refuse_negative_strides(backend, arr, fail, what: str = "it") -> None:
    """A view with a negative stride (`x[::-1]`) on a backend whose launches cannot pass one:
    numba-cuda's own dispatcher refuses it the same way (its argument packing stores strides as
    unsigned sizes and stops with `OverflowError: value too large`), so the launch contract refuses
    it first, naming the argument, instead of leaking that error from deep in the packing."""
    strides = getattr(arr, "strides", None) or ()
    if getattr(backend, "negative_strides", True) or not any(s < 0 for s in strides):
        return
    raise fail(f"{what} is a view with negative strides {tuple(strides)} (bytes), e.g. x[::-1]; numba.cuda's own "
               f"dispatcher cannot pass such an array to a kernel either (its argument packing fails with "
               f"'OverflowError: value too large'); pass a copy (cupy.ascontiguousarray) or index backwards "
               f"inside the kernel", KernelError)


def array_layout(arr) -> str:
    """numba's layout for a device array: 'C' when C-contiguous, else 'A' (any strides)."""
    return "C" if _c_contiguous(arr) else "A"


def _c_contiguous(arr) -> bool:
    flags = getattr(arr, "flags", None)
    if flags is not None:
        try:
            return bool(flags["C_CONTIGUOUS"])
        except (KeyError, TypeError):
            return bool(getattr(flags, "c_contiguous", False))
    return False
