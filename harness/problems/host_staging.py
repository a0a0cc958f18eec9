"""Small problems on a GPU: states on the host, only the kernel launches on the device.

The oracles and relations of a problem make hundreds of small array operations (FD probes,
comparisons, norms, directions). On cupy each one is a kernel launch and a synchronisation (and,
in an empty cache, a cupy kernel compile); on numpy an 8-element operation costs about a
microsecond. So a problem whose arrays hold at most `policy.HOST_STATE_LIMIT` elements keeps
everything in numpy (`KernelProblem.on_host`) and stages each launch: every host allocation its
annotated arguments view is copied to the device once (views of one allocation stay views of one
device allocation, with their offsets and strides), the kernel runs, and every allocation is copied
back into the host array it came from. Larger problems keep their states on the device:
there a host round trip of the state would cost more than the operations.
"""
from __future__ import annotations

import os

import numpy as np

from harness import policy
from harness.core.activity import Active, BatchDuplicated, Const, Duplicated, map_arrays
from harness.problems.layouts import in_layout, element_layout, root_of


class HostArrays:
    """What layouts.device_view needs of a backend, with numpy arrays: the host twin of a device."""
    name = "host"

    @staticmethod
    def asarray(host: np.ndarray) -> np.ndarray:
        return np.array(host, copy=True)


HOST = HostArrays()


def total_elements(arrays) -> int:
    """Elements of the distinct allocations the arrays view: what a staged launch copies."""
    seen, total = set(), 0
    for a in arrays:
        root = root_of(a)
        if id(root) not in seen:
            seen.add(id(root))
            total += int(root.size)
    return total


def host_state_limit() -> int:
    """policy.HOST_STATE_LIMIT, or the environment's HARNESS_HOST_STATE_LIMIT (0 or -1 keeps every
    problem's states on the device: the comparison .ci/device-suite.sh makes with SUITE_DEVICE_STATES=1)."""
    value = os.environ.get("HARNESS_HOST_STATE_LIMIT", "").strip()
    if not value:
        return policy.HOST_STATE_LIMIT
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"HARNESS_HOST_STATE_LIMIT must be a whole number of elements, not {value!r}") from None


def keeps_on_host(device_module, host_arrays) -> bool:
    """A problem on a device backend (its array module is not numpy) whose arrays are small enough
    to check on the host, or that has an array of records (a random generator's states), which the
    device's array module (cupy) cannot hold: only the staged launches put it on the device."""
    if device_module is np:
        return False
    return total_elements(host_arrays) <= host_state_limit() or \
        any(np.asarray(a).dtype.fields is not None for a in host_arrays)


class Staged:
    """The device copies of one launch's host arrays, and the way back."""

    def __init__(self, backend):
        self.backend = backend
        self._roots: list[tuple[np.ndarray, object]] = []          # (host allocation, its device copy)
        self._loose: list[tuple[np.ndarray, object]] = []          # (host array, device copy): no layout kept

    def array(self, host: np.ndarray):
        """The device twin of `host`: a view into the device copy of its allocation."""
        layout = element_layout(host)
        if layout is None:                       # a view that reinterprets its memory: copied as it is
            dev = self.backend.asarray(np.ascontiguousarray(host))
            self._loose.append((host, dev))
            return dev
        root, offset, strides = layout
        flat = next((d for r, d in self._roots if r is root), None)
        if flat is None:
            flat = self.backend.asarray(np.ascontiguousarray(root.ravel(order="K")))
            self._roots.append((root, flat))
        if offset == 0 and host.size == root.size and host.flags.c_contiguous:
            return flat.reshape(host.shape)      # the whole allocation in order: a reshape, no strides
        return in_layout(flat, offset, host.shape, strides)

    def value(self, v):
        return self.array(v) if isinstance(v, np.ndarray) else v

    def annotation(self, ann):
        """An annotated argument with its arrays (value and shadows) replaced by device twins."""
        if isinstance(ann, Active):
            return Active(self.value(ann.value), ann.tangent)
        if isinstance(ann, (Const, Duplicated, BatchDuplicated)):
            return map_arrays(ann, self.value)
        return self.value(ann)

    def copy_back(self) -> None:
        """Every allocation back into the host memory it came from (the launch's writes)."""
        for root, flat in self._roots:
            # element_layout admits only allocations in one contiguous block (C or Fortran order),
            # whose order-"A" flattening is a view in ravel(order="K")'s order
            root.reshape(-1, order="A")[...] = self.backend.to_host(flat).reshape(-1)
        for host, dev in self._loose:
            host[...] = self.backend.to_host(dev).reshape(host.shape)


def staged_launch(engine, backend, kernel, config, args, mode: str):
    """`engine.launch` on device twins of the host arrays in `args`, their final values copied back
    into `args`' own arrays."""
    staged = Staged(backend)
    result = engine.launch(kernel, config, *[staged.annotation(a) for a in args], mode=mode)
    staged.copy_back()
    return result
