"""Memory geometry and aliasing of a launch's arrays: which arrays share memory, which overlap
themselves, and the refusal of any overlap that involves a derivative.

The engine's semantics (docs/engine.md: every differentiable array is a state variable of its
own, `dx += ...` per element) assume that every differentiable array and every shadow owns its
memory. Aliasing is allowed only between const arrays (plain primal semantics); anything else is
refused with an ActivityError naming both arguments, at every entry point: `Engine.launch` (and
through it the broadcast front end), device-side `autodiff` (docs/engine.md, "Aliasing"), and the
harness before it copies a case's arguments (harness/problems/layouts.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.errors import ActivityError


def data_pointer(arr) -> int | None:
    face = getattr(arr, "__array_interface__", None) or getattr(arr, "__cuda_array_interface__", None)
    if not face:
        return None
    return int(face["data"][0])


def root_of(host: np.ndarray) -> np.ndarray:
    """The ndarray that owns `host`'s memory (following .base through numpy's helper objects)."""
    root, node = host, host
    while getattr(node, "base", None) is not None:
        node = node.base
        if isinstance(node, np.ndarray):
            root = node
    return root


def byte_span(arr) -> tuple[int, int] | None:
    """[lo, hi) byte addresses that `arr`'s elements touch; None when unknown or empty."""
    ptr = data_pointer(arr)
    shape, strides = tuple(getattr(arr, "shape", ())), getattr(arr, "strides", None)
    if ptr is None or strides is None or any(n == 0 for n in shape):
        return None
    lo = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + np.dtype(arr.dtype).itemsize
    return lo, hi


def may_overlap(a, b) -> bool:
    """Whether two arrays share memory: exact for numpy arrays, by byte ranges for device arrays."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        try:
            return bool(np.shares_memory(a, b, max_work=10 ** 6))
        except np.exceptions.TooHardError:
            return bool(np.may_share_memory(a, b))
    sa, sb = byte_span(a), byte_span(b)
    return sa is not None and sb is not None and sa[0] < sb[1] and sb[0] < sa[1]


def self_overlap(arr) -> str | None:
    """Why distinct elements of `arr` may share memory ('broadcast (stride 0 on axis 1)',
    'overlapping strides ...'), or None when the strides prove they cannot."""
    shape, strides = tuple(getattr(arr, "shape", ())), getattr(arr, "strides", None)
    if strides is None:
        return None
    zero = [d for d, (n, s) in enumerate(zip(shape, strides)) if n > 1 and s == 0]
    if zero:
        return f"broadcast (stride 0 on axis {', '.join(map(str, zero))})"
    # Sufficient condition for no overlap: sorted by |stride|, each stride clears the extent of
    # every smaller axis.
    extent = np.dtype(arr.dtype).itemsize
    for n, s in sorted(((n, abs(s)) for n, s in zip(shape, strides) if n > 1), key=lambda t: t[1]):
        if s < extent:
            return f"overlapping strides {tuple(strides)} (bytes) for shape {tuple(shape)}"
        extent = s * (n - 1) + extent
    return None


@dataclass(frozen=True)
class Buffer:
    """One array of a launch: an argument's primal or one of its shadows."""
    position: int
    name: str
    role: str                 # 'primal' | 'shadow' | 'shadow k'
    array: Any
    differentiable: bool      # the argument's activity is not const

    def describe(self) -> str:
        who = f"argument {self.position} ('{self.name}')"
        return who if self.role == "primal" else f"the {self.role} of {who}"


def check_layout(position: int, name: str, array, activity: str) -> None:
    """A differentiable array must not overlap itself (broadcast or overlapping strides)."""
    if activity == "const":
        return
    why = self_overlap(array)
    if why:
        raise ActivityError(
            f"argument {position} ('{name}') is a {why} view marked {activity}: its elements share "
            "memory, so their derivatives would collide in one shadow cell; a broadcast array can only "
            f"be const (mark '{name}' const, or pass a materialized copy)", argument=position, param=name)


def check_aliasing(buffers: Sequence[Buffer]) -> None:
    """Refuse any memory overlap among `buffers` except between two const primals."""
    for j, b in enumerate(buffers):
        for a in buffers[:j]:
            if a.role == "primal" and b.role == "primal" and not a.differentiable and not b.differentiable:
                continue                         # const-const aliasing: plain primal semantics
            if not may_overlap(a.array, b.array):
                continue
            if a.position == b.position and {a.role, b.role} == {"primal", "shadow"}:
                what, fix = (f"argument {a.position} ('{a.name}') is passed as its own shadow",
                             f"give '{a.name}' a shadow buffer of its own")
            else:
                what, fix = (f"{a.describe()} and {b.describe()} share memory",
                             f"pass '{b.name}' a copy" if a.name != b.name else "pass separate buffers")
            raise ActivityError(
                f"{what}: aliasing is allowed only between const arrays; an overlap involving a "
                "differentiable array or a shadow would mix primal values and derivatives, or two "
                f"derivatives, in the same memory ({fix})", argument=b.position, param=b.name)


def check_arguments(buffers: Sequence[Buffer]) -> None:
    """A launch's arrays: no differentiable array overlaps itself, and no overlap among them
    involves a differentiable array or a shadow."""
    for b in buffers:
        if b.role == "primal" and b.differentiable:
            check_layout(b.position, b.name, b.array, "differentiable")
    check_aliasing(buffers)


def argument_buffers(infos) -> list[Buffer]:
    """The Buffer list of a launch's classified arguments (engine/runtime/signature.py ArgInfo)."""
    out = []
    for i in infos:
        if i.kind != "array":
            continue
        out.append(Buffer(i.position, i.name, "primal", i.value, i.differentiable))
        for k, sh in enumerate(i.shadows):
            out.append(Buffer(i.position, i.name, "shadow" if len(i.shadows) == 1 else f"shadow {k}", sh,
                              i.differentiable))
    return out


def check_nested_aliasing(calls, values: dict, check=None) -> None:
    """Device-side autodiff calls: the arrays one call passes (primals and shadows, by kernel
    parameter) follow the same rule as a launch's. `calls` holds, per call, (function name, call site,
    ((position, parameter, role, kernel array, differentiable), ...)). `check`: the engine's
    check_arguments (its seam; this module's when None)."""
    check = check or check_arguments
    for fname, site, arrays in calls:
        local = {}                    # kernel-allocated arrays: one stand-in allocation per name
        buffers = [Buffer(pos, name, role, values[array] if array in values else
                          local.setdefault(array, np.empty(1)), diff) for pos, name, role, array, diff in arrays]
        try:
            check(buffers)
        except ActivityError as exc:
            raise ActivityError(f"{site}: autodiff of {fname}: {exc}", argument=exc.argument,
                                param=exc.param) from None
