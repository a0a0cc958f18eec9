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
  (`dx += ...` per element) assume that every differentiable array and every
  shadow owns its memory.

The harness checks before copying (KernelProblem), so a case's error names its arguments before
anything runs; `Engine.launch` applies the same checks (harness/engine/analyses/memory.py) to the device
arrays it is given, and `check_launch` runs them on annotated arguments without launching.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.core.activity import Active, BatchDuplicated, Const, Duplicated
# the geometry and the checks live in the engine, which applies them at every launch
from harness.engine.analyses.memory import (Buffer, data_pointer, byte_span, check_aliasing, check_arguments,  # noqa: F401
                            check_layout, may_overlap, root_of, self_overlap)


def _as_strided(flat, shape, strides):
    if isinstance(flat, np.ndarray):
        return np.lib.stride_tricks.as_strided(flat, shape, strides)
    from harness.oracles.arrays import xp_of
    return xp_of(flat).lib.stride_tricks.as_strided(flat, shape, strides)     # cupy's for cupy arrays


def element_layout(host: np.ndarray) -> tuple[np.ndarray, int, tuple[int, ...]] | None:
    """(the allocation `host` views, its offset into it, its strides), offset and strides counted in
    elements; None where they cannot be (a view that reinterprets its allocation as another dtype, or
    an allocation that is not one contiguous block)."""
    root = root_of(host)
    item = host.dtype.itemsize
    offset = (data_pointer(host) or 0) - (data_pointer(root) or 0)
    if (root.dtype != host.dtype or not (root.flags.c_contiguous or root.flags.f_contiguous)
            or offset % item or any(s % item for s in host.strides)):
        return None
    return root, offset // item, tuple(s // item for s in host.strides)


def in_layout(flat, offset: int, shape, strides: tuple[int, ...]):
    """A view of the 1-d array `flat` (numpy or a device array) at an element offset and strides."""
    return _as_strided(flat[offset:], tuple(shape), tuple(s * flat.dtype.itemsize for s in strides))


def copy_with_layout(host: np.ndarray, dtype=None) -> np.ndarray:
    """A fresh host copy of `host` (in `dtype` if given) that keeps its layout: the same strides and
    offset, in elements, into a copy of its whole allocation; so a float64 probe of a float32 argument
    is never rounded through float32, and a shadow has its primal's strides. A plain contiguous copy
    where the layout cannot be kept (`element_layout` is None)."""
    dtype = np.dtype(dtype) if dtype is not None else host.dtype
    layout = None if root_of(host) is host and host.flags.c_contiguous else element_layout(host)
    if layout is None:
        return np.array(host, dtype=dtype)
    root, offset, strides = layout
    return in_layout(root.ravel(order="K").astype(dtype, copy=True), offset, host.shape, strides)


def filled_like(view: np.ndarray, values) -> np.ndarray:
    """A fresh host array with `view`'s layout (copy_with_layout) holding `values`."""
    out = copy_with_layout(view)
    out[...] = values
    return out


def device_view(backend, host: np.ndarray, roots: dict | None = None, dtype=None):
    """A device copy of `host` (cast to `dtype` if given) with the same strides, the same offset into
    its allocation, and, through `roots` (one dict per launch), the same sharing: arguments that are
    views of one host allocation become views of one device allocation."""
    dtype = np.dtype(dtype) if dtype is not None else host.dtype
    plain = root_of(host) is host and host.flags.c_contiguous
    layout = element_layout(host)
    if plain and roots is None or layout is None:
        return backend.asarray(np.ascontiguousarray(host, dtype=dtype) if dtype != host.dtype or layout is None
                               else host)
    root, offset, strides = layout
    roots = {} if roots is None else roots
    # one device copy per (host allocation, dtype), found by identity: two equal arrays are two allocations
    shared = roots.setdefault(dtype.str, [])
    flat = next((dev for host_root, dev in shared if host_root is root), None)
    if flat is None:
        flat = backend.asarray(root.ravel(order="K").astype(dtype, copy=True))
        shared.append((root, flat))
    if plain:
        return flat.reshape(host.shape)
    return in_layout(flat, offset, host.shape, strides)


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
    from harness.engine.frontend.source import python_function
    fn = python_function(kernel)
    names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    check_arguments(launch_buffers(names, args, _is_array))
