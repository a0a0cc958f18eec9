"""The differentiable problem the oracles check, independent of numba and of the case format.

A kernel launch is a map F from its initial differentiable state (arrays marked Duplicated-like,
plus Active scalars) to its final differentiable state (the same arrays; Active scalars are inputs
only). The runner adapts an engine launch to this protocol; the oracles only see dicts of float64
numpy arrays keyed by argument name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class StateVar:
    name: str
    shape: tuple[int, ...]          # () for an Active scalar


class DiffProblem(Protocol):
    inputs: list[StateVar]          # components of the initial state, in argument order
    outputs: list[StateVar]         # components of the final state, in argument order
    dtype: str                      # the dtype the engine computes in (float32 | float64)

    def base_point(self) -> dict[str, np.ndarray]:
        """The initial state s0 as float64 copies."""

    def primal64(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """F(state) evaluated in float64 (a fresh launch on fresh copies of every argument)."""

    def primal_native(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """F(state) evaluated at the run's own dtypes (optional: the FD oracle uses it to tell a
        wrong derivative from a float32 program whose branches differ from its float64 twin)."""

    def jvp(self, tangent: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Engine forward mode at s0: J v, keyed by output name."""

    def vjp(self, cotangent: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Engine reverse mode at s0: J^T w, keyed by input name."""


def flatten(vars_: list[StateVar], values: dict[str, np.ndarray]) -> np.ndarray:
    """The values of `vars_` as one float64 vector of their own module (numpy or a device's)."""
    from harness.oracles.arrays import f64, xp_of
    if not vars_:
        return np.zeros(0)
    xp = xp_of(*(values[v.name] for v in vars_))
    return xp.concatenate([f64(values[v.name], xp).reshape(-1) for v in vars_])


def unflatten(vars_: list[StateVar], flat: np.ndarray) -> dict[str, np.ndarray]:
    out, at = {}, 0
    for v in vars_:
        n = int(np.prod(v.shape)) if v.shape else 1
        out[v.name] = flat[at:at + n].reshape(v.shape)
        at += n
    return out


def entry_names(vars_: list[StateVar]) -> "Names":
    """Readable names of every flat entry: `out[3]`, `x[1,2]`, `a`, as a sequence that builds a
    name only when it is read (harness/oracles/names.py)."""
    from harness.oracles.names import Names, array_entry_names
    return Names.concat([array_entry_names(v.name, v.shape) for v in vars_])
