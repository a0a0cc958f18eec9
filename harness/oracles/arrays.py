"""The array module (`xp`) the oracles compute with: numpy for host arrays, cupy for device arrays.

A problem may hand the oracles device arrays (and say `xp = cupy`): every entrywise step (FD
probes, comparisons, norms, dot products, the zero guard) then runs where the arrays are, and only
scalars and the few worst entries come back to the host. numpy's own functions are used where
they dispatch to cupy (ufuncs, and functions cupy implements through __array_function__); array
creation and conversion go through `xp` explicitly.

`register_array_module(type, module)` is the seam for other device array types: the tests register
a numpy wrapper whose host conversion raises (tests/device_fake.py), so a host round trip on the
runner path fails a test instead of costing seconds on a GPU.
"""
from __future__ import annotations

import numpy as np

# process-wide: an array type's module (numpy, cupy, ...) is a fact of the installed packages, registered at import
_MODULES: dict[type, object] = {}


def register_array_module(array_type: type, module) -> None:
    """Arrays of `array_type` are computed on with `module` (cupy's arrays need no registration)."""
    _MODULES[array_type] = module


def module_of(value):
    """The array module of one value: cupy for cupy arrays, a registered module, else numpy."""
    t = type(value)
    if t in _MODULES:
        return _MODULES[t]
    if t.__module__.split(".")[0] == "cupy":
        import cupy
        return cupy
    return np


def xp_of(*values):
    """The device module when any value is a device array, else numpy."""
    for v in values:
        xp = module_of(v)
        if xp is not np:
            return xp
    return np


def xp_of_problem(problem):
    return getattr(problem, "xp", None) or np


def f64(value, xp=None):
    """`value` as a float64 array of its own module (no copy when it already is one)."""
    xp = xp or xp_of(value)
    return xp.asarray(value, dtype=xp.float64)


def f64_copy(value, xp=None):
    xp = xp or xp_of(value)
    return xp.array(value, dtype=xp.float64, copy=True)


def max_abs(a) -> float:
    """max |a| (NaN when a holds one); 0 for an empty array. One scalar comes to the host."""
    if not a.size:
        return 0.0
    return float(xp_of(a).abs(a).max())


def finite_max_abs(a) -> float:
    """max |a| over a's finite entries; 0 when there are none."""
    if not a.size:
        return 0.0
    xp = xp_of(a)
    return float(xp.abs(xp.where(xp.isfinite(a), a, 0.0)).max())


def all_finite(a) -> bool:
    return bool(xp_of(a).isfinite(a).all())


def any_nonzero(a) -> bool:
    return bool(a.any()) if hasattr(a, "any") else bool(np.any(a))


def first_true(mask) -> int:
    """The flat index of the first True entry of `mask` (which has one): argmax, not a host copy."""
    return int(xp_of(mask).argmax(mask.reshape(-1)))


def standard_normal(rng: np.random.Generator, shape, xp=np):
    """Standard normal draws of `shape`: from `rng` itself on the host; on a device, from a device
    generator seeded by one draw of `rng` (so a case seed still reproduces the run)."""
    if xp is np:
        return np.asarray(rng.standard_normal(shape), dtype=np.float64)
    seed = int(rng.integers(0, 2 ** 32))
    shape = tuple(shape)
    draws = xp.random.RandomState(seed).standard_normal(size=shape or (1,), dtype=xp.float64)
    return draws.reshape(shape)                       # an Active scalar's draw is a 0-d array


def to_host(a) -> np.ndarray:
    """A host copy of a (small) array, for sorting the few candidates of the worst entries."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def top_indices(values, k: int, among=None) -> np.ndarray:
    """Host indices of the k largest `values` (of the indices `among`, when given), largest first,
    ties in index order: `argsort(-values, kind="stable")[:k]` without a full sort, and with only
    the k candidates coming to the host."""
    xp = xp_of(values)
    idx = xp.arange(values.size) if among is None else among
    key = -values[idx]
    if k < idx.size:
        kth = xp.partition(key, k - 1)[k - 1]
        below, tied = xp.flatnonzero(key < kth), xp.flatnonzero(key == kth)
        pick = xp.concatenate([below, tied[:k - int(below.size)]])
        idx, key = idx[pick], key[pick]
    idx, key = to_host(idx), to_host(key)
    return idx[np.lexsort((idx, key))]
