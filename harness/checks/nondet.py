"""The nondeterminism oracle (docs/activities.md, "Nondeterminism").

`check: {repeat: N}` launches the run's derivative N times on identical inputs, direction and
cotangent; `check: {block_sweep: [32, 64, ...]}` launches it again with each block size (for
`threads:` launches and broadcast/map launches, where the grid follows the block). Every result is
compared with the first launch's:

* bitwise: how many entries differ in any bit (reported, never failing by itself: float atomics
  legitimately reorder on a GPU);
* relatively: the largest difference over the largest entry of the first result, against the
  reordering tolerance NONDET_RTOL (float32 1e-5, float64 1e-12).

A difference beyond tolerance is a failing verdict named 'nondet', which the runner maps to the
NONDET state; its message gives the spread and where it is largest. Default: repeat 1 and no sweep,
so no extra launches unless the case asks.
"""
from __future__ import annotations

import warnings

import numpy as np

from harness import policy
from harness.engine.runtime.launch import LaunchConfig
from harness.problems.kernel import KernelProblem
from harness.model import OracleVerdict, WorstEntry
from harness.oracles.arrays import f64, finite_max_abs, top_indices, xp_of
from harness.oracles.fd import copy_values, make_cotangent, make_directions

NONDET_RTOL = policy.REPEAT_RTOL


def sweep_config(case, engine, args, block: int) -> LaunchConfig | None:
    """The launch with block size `block`, the grid following; None when the launch fixes its grid."""
    spec = case.launch
    if spec.style in ("broadcast", "map"):
        return engine.config_for(args[0].value, block)
    if spec.threads and len(spec.threads) == 1:
        return LaunchConfig.threads(spec.threads[0], block)
    return None


def _flat(result: dict, keys: list[str]) -> np.ndarray:
    """One float64 vector in the results' own module (device arrays stay on the device)."""
    parts = [f64(result[k]).reshape(-1) for k in keys if k in result]
    return xp_of(*parts).concatenate(parts) if parts else np.zeros(0)


def _names(problem: KernelProblem, mode: str) -> tuple[list[str], list[str]]:
    from harness.oracles.problem import entry_names
    vars_ = problem.outputs if mode == "forward" else problem.inputs
    return [v.name for v in vars_], entry_names(vars_)


def _bitwise_differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    xp = xp_of(a, b)
    same = (a == b) | (xp.isnan(a) & xp.isnan(b))
    return ~same | (xp.signbit(a) != xp.signbit(b))


def nondet_verdict(problem: KernelProblem, mode: str, *, repeat: int = 1, block_sweep=None, case=None,
                   engine=None, args=None, rng: np.random.Generator | int = 0) -> OracleVerdict | None:
    """Repeat the run's derivative launch and sweep block sizes; None when neither is asked for."""
    sweep = tuple(block_sweep or ())
    if repeat <= 1 and not sweep:
        return None
    if mode not in ("forward", "reverse") or not problem.inputs or not problem.outputs:
        return OracleVerdict("nondet", "skip", "nothing to differentiate")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    v, w = make_directions(problem, 1, rng)[0], make_cotangent(problem, rng)
    keys, entries = _names(problem, mode)
    tol = policy.repeat_rtol(problem.dtype)

    def evaluate(config) -> np.ndarray:
        p = problem.with_launch(config=config)
        out = p.jvp(copy_values(v)) if mode == "forward" else p.vjp(copy_values(w))
        return _flat(out, keys)

    first = evaluate(problem.config)
    xp = xp_of(first)
    scale = finite_max_abs(first) or 1.0
    metrics: dict = {"rtol": tol, "scale": scale}
    problems, notes, worst = [], [], []

    if repeat > 1:
        runs = xp.stack([first] + [evaluate(problem.config) for _ in range(repeat - 1)])
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)          # an all-NaN entry: NaN, as intended
            lo, hi = xp.nanmin(runs, axis=0), xp.nanmax(runs, axis=0)
        spread = xp.where(xp.isnan(runs).any(axis=0) & ~xp.isnan(runs).all(axis=0), np.inf, hi - lo)
        bitwise = xp.zeros(first.shape, dtype=bool)
        for r in runs[1:]:
            bitwise |= _bitwise_differ(first, r)
        rel = (float(spread.max()) if spread.size else 0.0) / scale
        metrics.update({"repeat": repeat, "repeat_rel_spread": rel, "repeat_bitwise_differing": int(bitwise.sum()),
                        "n": int(first.size)})
        k = int(spread.argmax()) if spread.size else 0
        if rel > tol:
            problems.append(f"{repeat} identical {mode} launches disagree: relative spread {rel:.3g} (> {tol:.0e}), "
                            f"{int(bitwise.sum())} of {first.size} entries differ bitwise; widest at {entries[k]}: "
                            f"{float(lo[k]):.6g} .. {float(hi[k]):.6g}")
        elif bitwise.any():
            notes.append(f"{repeat} identical launches differ bitwise in {int(bitwise.sum())} of {first.size} entries, "
                         f"within reordering tolerance (relative spread {rel:.3g})")
        else:
            notes.append(f"{repeat} identical {mode} launches agree bitwise")
        order = top_indices(spread, min(8, spread.size))
        worst += [WorstEntry(f"{entries[i]} (repeat)", float(lo[i]), float(hi[i]), float(spread[i]),
                             float(spread[i] / scale)) for i in order if spread[i] > 0]

    if sweep:
        base_block = problem.config.block[0] if problem.config.block else None
        diffs = {}
        for b in sweep:
            config = sweep_config(case, engine, args, int(b)) if case is not None else None
            if config is None:
                notes.append("block_sweep skipped: a grid/block launch fixes its grid (use threads: N)")
                break
            if config == problem.config:
                continue
            got = evaluate(config)
            d = xp.where(xp.isnan(got) & xp.isnan(first), 0.0, xp.abs(got - first))
            d = xp.where(xp.isnan(d), np.inf, d)
            diffs[int(b)] = (float(d.max()) if d.size else 0.0) / scale
            k = int(d.argmax()) if d.size else 0
            if diffs[int(b)] > tol:
                problems.append(f"the result depends on the block size: block {b} vs {base_block} differs by "
                                f"{diffs[int(b)]:.3g} relative (> {tol:.0e}) at {entries[k]}: {float(got[k]):.6g} vs {float(first[k]):.6g}")
                worst.append(WorstEntry(f"{entries[k]} (block {b})", float(got[k]), float(first[k]), float(d[k]),
                                        float(d[k] / scale)))
        if diffs:
            metrics["sweep"] = {str(b): r for b, r in diffs.items()}
            metrics["base_block"] = base_block
            if not any(r > tol for r in diffs.values()):
                notes.append(f"block sizes {', '.join(map(str, diffs))} agree with {base_block} "
                             f"(max rel diff {max(diffs.values()):.3g} <= {tol:.0e})")
    worst = sorted(worst, key=lambda e: -e.rel_err)[:8]
    if problems:
        return OracleVerdict("nondet", "fail", "; ".join(problems), metrics, worst)
    if not any(key in metrics for key in ("repeat", "sweep")):
        return OracleVerdict("nondet", "skip", "; ".join(notes), metrics)
    return OracleVerdict("nondet", "pass", "; ".join(notes), metrics, worst)
