"""Memory layouts and aliasing of a launch's arrays (docs/activities.md, "Layouts" and "Aliasing").

Three jobs, each usable from the runner and from the Python API:

* `device_view(backend, host, roots)`: the device copy of a host array that keeps what the host
  view says about memory: its strides, its offset into its allocation, and which other arguments
  it shares that allocation with. Views of one host allocation become views of one device
  allocation (one copy per allocation and per launch, kept in `roots`), so an argument passed twice
  is one buffer on the device too.
* `check_layout(...)`: a view whose elements overlap (a broadcast, stride-0 axis, or overlapping
  strides) can only be const: a shadow with that layout would make distinct elements' derivatives
  collide in one memory cell.
* `check_aliasing(...)` / `check_launch(kernel, *args)`: overlapping memory among a launch's arrays
  is allowed only between const arrays (the primal semantics of a shared buffer are well defined);
  an overlap that involves a differentiable array or any shadow is refused with an
  `ActivityError` naming both arguments, because the engine's accumulate semantics
  (`dx += ...` per element, DESIGN section 3) assume that every differentiable array and every
  shadow owns its memory.

The engine cannot see host-level aliasing after the harness has copied arguments to the device,
so the harness checks before copying (KernelProblem), and Python-API users who build device
arrays themselves call `check_launch` with the annotated arguments they pass to `Engine.launch`.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .activity import Active, BatchDuplicated, Const, Duplicated
from .errors import ActivityError


# ----------------------------------------------------------------------------- memory geometry

def _pointer(arr) -> int | None:
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
    ptr = _pointer(arr)
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


def _as_strided(flat, shape, strides):
    if isinstance(flat, np.ndarray):
        return np.lib.stride_tricks.as_strided(flat, shape, strides)
    xp = sys.modules[type(flat).__module__.split(".")[0]]         # cupy for cupy arrays
    return xp.lib.stride_tricks.as_strided(flat, shape, strides)


def recast_view(host: np.ndarray, dtype) -> np.ndarray:
    """A host copy of `host` in another dtype with the same layout (strides and offset counted in
    elements), so a float64 probe of a float32 argument is never rounded through float32."""
    dtype = np.dtype(dtype)
    root = root_of(host)
    item = host.dtype.itemsize
    offset = (_pointer(host) or 0) - (_pointer(root) or 0)
    if root.dtype != host.dtype or offset % item or any(s % item for s in host.strides):
        return np.array(host, dtype=dtype)
    flat = root.ravel(order="K").astype(dtype, copy=True)
    strides = tuple(s // item * dtype.itemsize for s in host.strides)
    return np.lib.stride_tricks.as_strided(flat[offset // item:], host.shape, strides)


def device_view(backend, host: np.ndarray, roots: dict | None = None, dtype=None):
    """A device copy of `host` (cast to `dtype` if given) with the same strides, the same offset into
    its allocation, and, through `roots` (one dict per launch), the same sharing: arguments that are
    views of one host allocation become views of one device allocation."""
    dtype = np.dtype(dtype) if dtype is not None else host.dtype
    root = root_of(host)
    plain = root is host and host.flags.c_contiguous
    item = host.dtype.itemsize
    offset = (_pointer(host) or 0) - (_pointer(root) or 0)
    layout_ok = (root.dtype == host.dtype and (root.flags.c_contiguous or root.flags.f_contiguous)
                 and offset % item == 0 and all(s % item == 0 for s in host.strides))
    if plain and roots is None or not layout_ok:
        return backend.asarray(np.ascontiguousarray(host, dtype=dtype) if dtype != host.dtype or not layout_ok
                               else host)
    roots = {} if roots is None else roots
    key = (id(root), dtype.str)
    if key not in roots:
        roots[key] = (root, backend.asarray(root.ravel(order="K").astype(dtype, copy=True)))
    flat = roots[key][1]
    if plain:
        return flat.reshape(host.shape)
    strides = tuple(s // item * dtype.itemsize for s in host.strides)       # in elements, rescaled
    return _as_strided(flat[offset // item:], tuple(host.shape), strides)


# ----------------------------------------------------------------------------- the checks

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


def launch_buffers(names: Sequence[str], args: Sequence[Any], is_array) -> list[Buffer]:
    """The Buffer list of activity-annotated launch arguments (bare values count as Const)."""
    out = []
    for pos, (name, ann) in enumerate(zip(names, args)):
        if not isinstance(ann, (Const, Duplicated, BatchDuplicated, Active)):
            ann = Const(ann)
        if not is_array(ann.value):
            continue
        diff = not isinstance(ann, Const)
        out.append(Buffer(pos, name, "primal", ann.value, diff))
        shadows = ann.shadows if isinstance(ann, BatchDuplicated) else \
            (ann.shadow,) if isinstance(ann, Duplicated) else ()
        for k, sh in enumerate(shadows):
            if is_array(sh):
                out.append(Buffer(pos, name, "shadow" if len(shadows) == 1 else f"shadow {k}", sh, diff))
    return out


def _is_array(value) -> bool:
    return hasattr(value, "__array_interface__") and hasattr(value, "strides") or \
        hasattr(value, "__cuda_array_interface__")


def check_launch(kernel, *args) -> None:
    """For Python-API users: check the annotated arguments of `Engine.launch(kernel, config, *args)`
    before launching: differentiable arrays must not overlap themselves, and memory may be shared
    only between const arrays. Raises ActivityError naming the argument(s)."""
    from .engine.frontend import python_function
    fn = python_function(kernel)
    names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    buffers = launch_buffers(names, args, _is_array)
    for b in buffers:
        if b.role == "primal" and b.differentiable:
            check_layout(b.position, b.name, b.array, "differentiable")
    check_aliasing(buffers)
