"""The array module (`xp`) the oracles compute with: numpy for host arrays, cupy for device arrays.

A problem may hand the oracles device arrays (and say `xp = cupy`): every entrywise step (FD
probes, comparisons, norms, dot products, the zero guard) then runs where the arrays are, and only
scalars and the few worst entries come back to the host. numpy's own functions are used where
they dispatch to cupy (ufuncs, and functions cupy implements through __array_function__); array
creation and conversion go through `xp` explicitly.
"""
from __future__ import annotations

import numpy as np


def xp_of(*values):
    """cupy when any value is a cupy array, else numpy."""
    for v in values:
        if type(v).__module__.split(".")[0] == "cupy":
            import cupy
            return cupy
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


def finite_max_abs(a) -> float:
    """max |a| over a's finite entries; 0 when there are none."""
    if not a.size:
        return 0.0
    xp = xp_of(a)
    return float(xp.abs(xp.where(xp.isfinite(a), a, 0.0)).max())


def any_nonzero(a) -> bool:
    return bool(a.any()) if hasattr(a, "any") else bool(np.any(a))


def standard_normal(rng: np.random.Generator, shape, xp=np):
    """Standard normal draws of `shape`: from `rng` itself on the host; on a device, from a device
    generator seeded by one draw of `rng` (so a case seed still reproduces the run)."""
    if xp is np:
        return np.asarray(rng.standard_normal(shape), dtype=np.float64)
    seed = int(rng.integers(0, 2 ** 32))
    return xp.random.RandomState(seed).standard_normal(size=shape, dtype=xp.float64)


def to_host(a) -> np.ndarray:
    """A host copy of a (small) array, for sorting the few candidates of the worst entries."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)
