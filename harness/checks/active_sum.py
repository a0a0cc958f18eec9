"""A second, independent check of an Active scalar's adjoint (verdict `active-sum`).

The reverse sweep sums an Active scalar's adjoint over every thread on the device (a per-block
reduction, then one atomic add per block). The activity relation `rel-active` compares it with a
one-element Duplicated buffer, which is another accumulation on the device. This check shares
nothing with either: forward mode broadcasts the scalar's tangent and sums nothing, so

    (J^T w)_a  =  <w, J e_a>  =  sum over the final state of w * (J e_a)

is re-accumulated here, in float64 (on the device where the problem's state lives), from one forward launch seeded on `a` alone.
The terms' rounding bounds the difference: |got - ref| <= rtol * sum |w * J e_a|, rtol the
relations' (policy.relation_rtol). A float32 accumulation of the adjoint fails it in a float64 run.
"""
from __future__ import annotations

import numpy as np

from harness import policy
from harness.core.errors import HarnessError
from harness.model import OracleVerdict
from harness.oracles.arrays import f64, xp_of_problem
from harness.oracles.fd import make_cotangent

ACTIVE_SUM = "active-sum"


def active_sum_verdict(problem, mode: str, rng: np.random.Generator) -> OracleVerdict | None:
    """The reverse run's adjoint of each Active scalar against <w, J e_a> summed in float64; None
    where no Active scalar is differentiated in a reverse run of one lane."""
    scalars = [v.name for v in problem.inputs if tuple(v.shape) == ()]
    if mode != "reverse" or not scalars or getattr(problem, "width", 1) > 1:
        return None
    xp = xp_of_problem(problem)
    w = make_cotangent(problem, rng)
    try:
        got = problem.vjp(w)
        columns = {}
        for name in scalars:
            tangent = {v.name: xp.zeros(tuple(v.shape)) for v in problem.inputs}
            tangent[name] = xp.ones(())
            columns[name] = problem.jvp(tangent)
    except (HarnessError, NotImplementedError) as exc:      # no forward mode (Warp): nothing to compare
        return OracleVerdict(ACTIVE_SUM, "skip", f"needs a forward launch: {type(exc).__name__}: {exc}")
    rtol = policy.relation_rtol(problem.dtype)
    worst, rows = 0.0, []
    for name in scalars:
        # summed where the state lives (float64 throughout): only the two sums reach the host
        terms = xp.concatenate([(f64(w[o.name], xp) * f64(columns[name][o.name], xp)).ravel()
                                for o in problem.outputs])
        ref, scale = float(xp.sum(terms)), float(xp.sum(xp.abs(terms)))
        value = float(_host(f64(got[name], xp)).reshape(()))
        ratio = abs(value - ref) / max(rtol * scale, np.finfo(np.float64).tiny)
        worst = max(worst, ratio)
        rows.append((name, value, ref, ratio))
    metrics = {"worst_ratio": worst, "rtol": rtol, "arguments": scalars}
    if worst <= 1.0:
        return OracleVerdict(ACTIVE_SUM, "pass", f"the adjoint of Active {', '.join(scalars)} equals <w, J e_a> "
                             f"re-accumulated in float64 from forward mode (worst err/tol {worst:.3g})", metrics)
    name, value, ref, ratio = max(rows, key=lambda r: r[3])
    return OracleVerdict(ACTIVE_SUM, "fail", f"the adjoint of Active {name} is {value:.17g}, but <w, J e_{name}> "
                         f"re-accumulated in float64 from forward mode is {ref:.17g} (err/tol {ratio:.3g}): the "
                         "scalar's sum over threads is wrong", metrics)


def _host(a) -> np.ndarray:
    """A float64 array where numpy sums it (a device array copied back)."""
    return np.asarray(a.get() if hasattr(a, "get") else a, dtype=np.float64)
