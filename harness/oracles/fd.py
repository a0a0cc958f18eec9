"""Finite-difference reference derivatives, always in float64 (DESIGN section 5.1).

Every probe builds fresh state dicts from the base point, so neither the base point nor the direction
is ever handed to the problem (kernels write their arguments in place), and every result is copied
out of whatever the problem returns before the next launch can overwrite it.
"""
from __future__ import annotations

import numpy as np

from harness.oracles.problem import DiffProblem, StateVar

EPS64 = float(np.finfo(np.float64).eps)
# Central differences: truncation ~ h^2, roundoff ~ eps/h; balanced at h ~ eps^(1/3) (about 6e-6).
CENTRAL_STEP = EPS64 ** (1.0 / 3.0)
# Richardson-extrapolated central differences: truncation ~ h^4, so the balance moves to
# h ~ eps^(1/5) (about 7e-4): a 100x larger step that divides primal noise by 100.
LARGE_STEP = EPS64 ** (1.0 / 5.0)


def _standard_normal(vars_: list[StateVar], rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {v.name: np.asarray(rng.standard_normal(v.shape), dtype=np.float64) for v in vars_}


def make_directions(problem: DiffProblem, k: int, rng: np.random.Generator) -> list[dict[str, np.ndarray]]:
    """k standard normal tangent directions over the initial state, drawn from `rng` in order."""
    return [_standard_normal(problem.inputs, rng) for _ in range(int(k))]


def make_cotangent(problem: DiffProblem, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One standard normal cotangent over the final state."""
    return _standard_normal(problem.outputs, rng)


def copy_values(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.array(v, dtype=np.float64, copy=True) for k, v in values.items()}


def base_state(problem: DiffProblem) -> dict[str, np.ndarray]:
    """float64 copies of the initial state, restricted to the declared inputs."""
    s0 = problem.base_point()
    missing = [v.name for v in problem.inputs if v.name not in s0]
    if missing:
        raise KeyError(f"base_point() lacks the state input(s) {', '.join(missing)}")
    return {v.name: np.array(s0[v.name], dtype=np.float64, copy=True).reshape(v.shape) for v in problem.inputs}


def inf_norm(values: dict[str, np.ndarray]) -> float:
    norms = [float(np.max(np.abs(a))) for a in values.values() if np.size(a)]
    return max(norms, default=0.0)


def step_size(base: dict[str, np.ndarray], v: dict[str, np.ndarray], *, relative: float = CENTRAL_STEP) -> float:
    """h such that the largest state perturbation |h v|_inf is `relative` * max(1, |s0|_inf):
    relative to the state's magnitude (roundoff of F scales with it), absolute below 1."""
    v_inf = inf_norm(v)
    if v_inf == 0.0:
        return 0.0
    return relative * max(1.0, inf_norm(base)) / v_inf


def _evaluate(problem: DiffProblem, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    result = problem.primal64(state)
    # Copy before the next launch: a problem may hand back buffers it reuses.
    return {o.name: np.array(result[o.name], dtype=np.float64, copy=True).reshape(o.shape)
            for o in problem.outputs if o.name in result}


def central_difference(problem: DiffProblem, base: dict[str, np.ndarray], v: dict[str, np.ndarray],
                       h: float) -> dict[str, np.ndarray]:
    """(F(s0 + h v) - F(s0 - h v)) / 2h for every output; outputs that do not move give zeros."""
    zeros = {o.name: np.zeros(o.shape) for o in problem.outputs}
    if h == 0.0:
        return zeros
    plus = {n: base[n] + h * np.asarray(v[n], dtype=np.float64) for n in base}
    minus = {n: base[n] - h * np.asarray(v[n], dtype=np.float64) for n in base}
    f_plus, f_minus = _evaluate(problem, plus), _evaluate(problem, minus)
    # An output the primal does not report is one it does not produce from the state: zero change.
    return {o.name: (f_plus[o.name] - f_minus[o.name]) / (2.0 * h)
            if o.name in f_plus and o.name in f_minus else zeros[o.name] for o in problem.outputs}


def richardson(coarse: dict[str, np.ndarray], fine: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """(4 D(h/2) - D(h)) / 3: cancels the h^2 term of the central difference's error."""
    return {k: (4.0 * fine[k] - coarse[k]) / 3.0 for k in coarse}


def fd_jvp(problem: DiffProblem, v: dict[str, np.ndarray], *, h: float | None = None,
           base: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Central finite-difference J v at the base point (2 primal launches)."""
    base = base_state(problem) if base is None else base
    return central_difference(problem, base, v, step_size(base, v) if h is None else h)


def fd_jvp_richardson(problem: DiffProblem, v: dict[str, np.ndarray], *, h: float | None = None,
                      base: dict[str, np.ndarray] | None = None,
                      coarse: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Richardson-extrapolated J v from steps h and h/2 (4 launches; 2 when D(h) is passed as `coarse`)."""
    base = base_state(problem) if base is None else base
    h = step_size(base, v) if h is None else h
    coarse = central_difference(problem, base, v, h) if coarse is None else coarse
    return richardson(coarse, central_difference(problem, base, v, h / 2.0))


def fd_jvp_large_step(problem: DiffProblem, v: dict[str, np.ndarray], *,
                      base: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Richardson-extrapolated J v with the larger step LARGE_STEP: the noise check. It agrees with
    the small-step estimates for a smooth, deterministic primal and wins when the primal is noisy."""
    base = base_state(problem) if base is None else base
    return fd_jvp_richardson(problem, v, h=step_size(base, v, relative=LARGE_STEP), base=base)
