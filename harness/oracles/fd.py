"""Finite-difference reference derivatives, always in float64.

Every probe builds fresh state dicts from the base point, so neither the base point nor the direction
is ever handed to the problem (kernels write their arguments in place), and every result is copied
out of whatever the problem returns before the next launch can overwrite it.
"""
from __future__ import annotations

import math

import numpy as np

from harness.oracles.arrays import any_nonzero, f64, f64_copy, finite_max_abs, standard_normal, xp_of, xp_of_problem
from harness.oracles.problem import DiffProblem, StateVar

EPS64 = float(np.finfo(np.float64).eps)
# Central differences: truncation ~ h^2, roundoff ~ eps/h; balanced at h ~ eps^(1/3) (about 6e-6).
CENTRAL_STEP = EPS64 ** (1.0 / 3.0)
# Richardson-extrapolated central differences: truncation ~ h^4, so the balance moves to
# h ~ eps^(1/5) (about 7e-4): a 100x larger step that divides primal noise by 100.
LARGE_STEP = EPS64 ** (1.0 / 5.0)
# A float64 kernel that computes in float32 inside (casts) has float32 roundoff in F, which the
# float64 steps above would divide by 6e-6: the same balance at float32's epsilon instead.
EPS32 = float(np.finfo(np.float32).eps)
STEPS_BY_PRECISION = {"float64": (CENTRAL_STEP, LARGE_STEP),
                      "float32": (EPS32 ** (1.0 / 3.0), EPS32 ** (1.0 / 5.0))}


def relative_steps(problem) -> tuple[float, float]:
    """(central, large) relative steps for the precision the primal really computes in: a problem
    may say `fd_precision = "float32"` when its float64 evaluation still rounds to float32."""
    return STEPS_BY_PRECISION[getattr(problem, "fd_precision", None) or "float64"]


def _standard_normal(vars_: list[StateVar], rng: np.random.Generator, xp=np) -> dict[str, np.ndarray]:
    return {v.name: standard_normal(rng, v.shape, xp) for v in vars_}


def make_directions(problem: DiffProblem, k: int, rng: np.random.Generator) -> list[dict[str, np.ndarray]]:
    """k standard normal tangent directions over the initial state, drawn from `rng` in order
    (on the problem's device when it declares one: arrays.py)."""
    return [_standard_normal(problem.inputs, rng, xp_of_problem(problem)) for _ in range(int(k))]


def make_cotangent(problem: DiffProblem, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One standard normal cotangent over the final state."""
    return _standard_normal(problem.outputs, rng, xp_of_problem(problem))


def copy_values(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: f64_copy(v) for k, v in values.items()}


def base_state(problem: DiffProblem) -> dict[str, np.ndarray]:
    """float64 copies of the initial state, restricted to the declared inputs."""
    s0 = problem.base_point()
    missing = [v.name for v in problem.inputs if v.name not in s0]
    if missing:
        raise KeyError(f"base_point() lacks the state input(s) {', '.join(missing)}")
    return {v.name: f64_copy(s0[v.name]).reshape(v.shape) for v in problem.inputs}


def inf_norm(values: dict[str, np.ndarray]) -> float:
    norms = [float(abs(a).max()) for a in map(f64, values.values()) if a.size]
    return max(norms, default=0.0)


def _magnitude(base: dict[str, np.ndarray], name: str) -> float:
    """max(1, |s0_a|_inf) of one argument: the scale its roundoff, and so its step, follows."""
    return max(1.0, finite_max_abs(f64(base.get(name, np.float64(0.0)))))


def step_size(base: dict[str, np.ndarray], v: dict[str, np.ndarray], *, relative: float = CENTRAL_STEP) -> float:
    """h such that the largest perturbation |h v|_inf is `relative` * max(1, |s0_a|_inf) over the
    arguments a that v moves: relative to their magnitude (roundoff of F scales with it), absolute
    below 1. Arguments v does not move do not enlarge the step (a large array elsewhere in the
    state must not move a small one by a large step); `argument_steps` groups them."""
    moved = [n for n, a in v.items() if any_nonzero(a)]
    v_inf = inf_norm({n: v[n] for n in moved})
    if v_inf == 0.0:
        return 0.0
    return relative * max(_magnitude(base, n) for n in moved) / v_inf


# Arguments whose magnitudes lie within this factor share one step (one pair of launches).
_GROUP_FACTOR = 4.0

Steps = tuple  # ((h, (argument names...)), ...): one step per group of similar magnitudes


def argument_steps(base: dict[str, np.ndarray], v: dict[str, np.ndarray], *,
                   relative: float = CENTRAL_STEP) -> Steps:
    """Steps per argument: each argument is probed with a step relative to its
    own magnitude, so an array of values near 10000 cannot move another array by 0.06 (enough to
    change which thread wins an atomic min). Arguments of similar magnitude (within a factor 4)
    share a step; each group costs its own pair of primal launches, and J v is the sum of the
    groups' central differences (J is linear in v)."""
    groups: dict[int, list[str]] = {}
    for name, a in v.items():
        if not any_nonzero(a):
            continue
        bucket = int(math.floor(math.log(_magnitude(base, name), _GROUP_FACTOR)))
        groups.setdefault(bucket, []).append(name)
    out = []
    for bucket in sorted(groups):
        names = tuple(groups[bucket])
        h = step_size(base, {n: v[n] for n in names}, relative=relative)
        if h > 0.0:
            out.append((h, names))
    return tuple(out)


def halved(steps: Steps | float) -> Steps | float:
    if isinstance(steps, tuple):
        return tuple((h / 2.0, names) for h, names in steps)
    return steps / 2.0


def largest_step(steps: Steps | float) -> float:
    if isinstance(steps, tuple):
        return max((h for h, _ in steps), default=0.0)
    return float(steps)


def _evaluate(problem: DiffProblem, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    result = problem.primal64(state)
    # Copy before the next launch: a problem may hand back buffers it reuses (or the state itself),
    # unless it says each result is its launch's own (`fresh_results`, KernelProblem).
    copy = f64 if getattr(problem, "fresh_results", False) is True else f64_copy
    return {o.name: copy(result[o.name]).reshape(o.shape) for o in problem.outputs if o.name in result}


def central_difference(problem: DiffProblem, base: dict[str, np.ndarray], v: dict[str, np.ndarray],
                       h: float | Steps) -> dict[str, np.ndarray]:
    """(F(s0 + h v) - F(s0 - h v)) / 2h for every output; outputs that do not move give zeros.
    With per-argument `Steps`, the sum over groups of the same along v restricted to the group.
    Arguments `v` does not name do not move. One probe state is alive at a time, and the
    differences are formed in place, so a probe costs few arrays of the state's size."""
    xp = xp_of(*base.values())
    if isinstance(h, tuple):
        total = None
        for group_h, names in h:
            d = central_difference(problem, base, {n: v[n] for n in names if n in v}, group_h)
            if total is None:
                total = d
            else:
                for k in total:
                    total[k] += d[k]
        return total if total is not None else {o.name: xp.zeros(o.shape) for o in problem.outputs}
    if h == 0.0:
        return {o.name: xp.zeros(o.shape) for o in problem.outputs}

    def probe(step: float) -> dict[str, np.ndarray]:
        state = {}
        for n in base:
            if n in v:
                moved = f64(v[n], xp) * step      # s0 + h v, a new array (base is never written)
                moved += base[n]
                state[n] = moved
            else:
                state[n] = base[n].copy()
        return _evaluate(problem, state)
    out = probe(h)                                # our own copies (_evaluate): differenced in place
    f_minus = probe(-h)
    for o in problem.outputs:
        # An output the primal does not report is one it does not produce from the state: zero change.
        if o.name in out and o.name in f_minus:
            out[o.name] -= f_minus[o.name]
            out[o.name] /= 2.0 * h
        else:
            out[o.name] = xp.zeros(o.shape)
    return {o.name: out[o.name] for o in problem.outputs}


def richardson(coarse: dict[str, np.ndarray], fine: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """(4 D(h/2) - D(h)) / 3: cancels the h^2 term of the central difference's error."""
    return {k: (4.0 * fine[k] - coarse[k]) / 3.0 for k in coarse}


def fd_jvp(problem: DiffProblem, v: dict[str, np.ndarray], *, h: float | None = None,
           base: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Central finite-difference J v at the base point (2 primal launches)."""
    base = base_state(problem) if base is None else base
    return central_difference(problem, base, v, argument_steps(base, v) if h is None else h)


def fd_jvp_richardson(problem: DiffProblem, v: dict[str, np.ndarray], *, h: float | None = None,
                      base: dict[str, np.ndarray] | None = None,
                      coarse: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Richardson-extrapolated J v from steps h and h/2 (4 launches; 2 when D(h) is passed as `coarse`)."""
    base = base_state(problem) if base is None else base
    h = argument_steps(base, v) if h is None else h
    coarse = central_difference(problem, base, v, h) if coarse is None else coarse
    return richardson(coarse, central_difference(problem, base, v, halved(h)))


def fd_jvp_large_step(problem: DiffProblem, v: dict[str, np.ndarray], *,
                      base: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Richardson-extrapolated J v with the larger step LARGE_STEP: the noise check. It agrees with
    the small-step estimates for a smooth, deterministic primal and wins when the primal is noisy."""
    base = base_state(problem) if base is None else base
    return fd_jvp_richardson(problem, v, h=argument_steps(base, v, relative=LARGE_STEP), base=base)
