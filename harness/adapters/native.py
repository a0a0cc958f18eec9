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

from dataclasses import dataclass

import numpy as np

from harness.core.errors import CaseError


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


@dataclass(frozen=True)
class NativeParam:
    """One declared parameter of a native kernel."""
    name: str
    array: bool                  # an array (Warp array, Taichi ndarray or field template)
    scalar_dtype: np.dtype | None  # the element's scalar type (None: a Taichi template, the case's)
    element_shape: tuple = ()    # (3,) for a vec3, (3, 3) for a mat33, (4,) for a quat
    ndim: int | None = 0         # the array's own dimensions, not the element's (None: any)
    template: bool = False       # a Taichi field passed as ti.template()


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


def host_for(param: NativeParam, host: np.ndarray, kernel_name: str) -> np.ndarray:
    """The case's host array as the kernel's declared element type: the element's shape must be the
    array's trailing dimensions (a case error otherwise: the case and the kernel disagree)."""
    k = len(param.element_shape)
    if k and tuple(host.shape[host.ndim - k:]) != param.element_shape:
        raise CaseError(f"argument '{param.name}' of {kernel_name} has elements of shape {param.element_shape}: "
                        f"the case's array needs them as trailing dimensions, its shape is {tuple(host.shape)}")
    if not param.template and param.ndim is not None and host.ndim - k != param.ndim:
        raise CaseError(f"argument '{param.name}' of {kernel_name} is a {param.ndim}-D array of "
                        f"{param.element_shape or 'scalars'}; the case's array has shape {tuple(host.shape)}")
    dtype = param.scalar_dtype if param.scalar_dtype is not None else host.dtype
    if np.issubdtype(host.dtype, np.floating) != np.issubdtype(dtype, np.floating):
        raise CaseError(f"argument '{param.name}' of {kernel_name} holds {dtype} elements; the case's array is "
                        f"{host.dtype}")
    return np.ascontiguousarray(host, dtype=dtype)


def check_names(kernel, args) -> list[NativeParam]:
    """The kernel's declared parameters, in the order of the launch's arguments (same names)."""
    declared = params(kernel)
    names = [p.name for p in declared]
    given = [a.name for a in args]
    if names != given:
        raise CaseError(f"the native kernel takes ({', '.join(names)}); the launch gives ({', '.join(given)})")
    return declared
