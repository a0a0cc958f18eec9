"""The declared parameters of a native Warp or Taichi kernel, and the case's host arrays as those
parameters take them: shared by native.py (which recognises native kernels) and the two systems'
modules (warp_native.py, taichi_native.py), which read the declarations."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.core.errors import CaseError


@dataclass(frozen=True)
class NativeParam:
    """One declared parameter of a native kernel."""
    name: str
    array: bool                  # an array (Warp array, Taichi ndarray or field template)
    scalar_dtype: np.dtype | None  # the element's scalar type (None: a Taichi template, the case's)
    element_shape: tuple = ()    # (3,) for a vec3, (3, 3) for a mat33, (4,) for a quat
    ndim: int | None = 0         # the array's own dimensions, not the element's (None: any)
    template: bool = False       # a Taichi field passed as ti.template()


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


def in_launch_order(declared: list[NativeParam], args) -> list[NativeParam]:
    """`declared`, checked to be in the order of the launch's arguments (same names)."""
    names = [p.name for p in declared]
    given = [a.name for a in args]
    if names != given:
        raise CaseError(f"the native kernel takes ({', '.join(names)}); the launch gives ({', '.join(given)})")
    return declared
