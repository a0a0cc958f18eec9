"""Native kernels: a case's kernel written in Warp's or Taichi's own language (`engines: {warp:
{kernel: ...}}`), run by that engine's adapter as written, with no translation.

The case's arguments are the kernel's: an array argument whose elements are vectors, matrices or
quaternions is the case's array with the element's shape as trailing dimensions (a `wp.vec3`
array of 8 elements is the case's (8, 3) array; a `wp.mat33` array of 8 is (8, 3, 3)). The
adapter converts the host arrays into the system's arrays of the declared element type and back,
so the oracles see the same launch contract as with any other kernel.

A native kernel computes in the precision its parameters declare (`wp.vec3` is float32): the
case's float64 arrays (finite differences evaluate in float64) are rounded to it on the way in, and
the oracles step and tolerate as for a kernel that computes in float32 inside (harness/problems/precision.py
asks `declares_float32`).

This module only recognises native kernels and reads their declared parameters; the adapters run
them (warp_native.py, taichi_native.py).
"""
from __future__ import annotations

import numpy as np

from harness.adapters.native_params import NativeParam


def system_of(kernel) -> str | None:
    """'warp' or 'taichi' for a kernel object of that system, else None (a numba.cuda kernel or a
    plain function). Decided by the object's type, without importing either system."""
    module = type(kernel).__module__ or ""
    if module.startswith("warp"):
        return "warp"
    primal = getattr(kernel, "_primal", None)
    if primal is not None and (type(primal).__module__ or "").startswith("taichi"):
        return "taichi"
    return None


def is_native(kernel) -> bool:
    return system_of(kernel) is not None


def native_function(kernel):
    """The Python function a native kernel was written as."""
    fn = getattr(kernel, "func", None) if system_of(kernel) == "warp" else getattr(kernel, "__wrapped__", None)
    if fn is None:
        raise TypeError(f"{kernel!r} is not a Warp or Taichi kernel")
    return fn


def params(kernel) -> list[NativeParam]:
    system = system_of(kernel)
    if system == "warp":
        from harness.adapters.warp_native import declared_params
        return declared_params(kernel)
    if system == "taichi":
        from harness.adapters.taichi_native import declared_params
        return declared_params(kernel)
    raise TypeError(f"{kernel!r} is not a Warp or Taichi kernel")


def declares_float32(kernel) -> bool:
    """True when a float parameter of the native kernel is float32: it computes in float32."""
    return any(p.scalar_dtype == np.dtype(np.float32) for p in params(kernel))
