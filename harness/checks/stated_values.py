"""The case's stated values (check.values) applied to a run.

Forward and reverse values follow from the direction the case chose (`shadow: {init: ...}`, the
same first direction the gradient oracles use): forward compares J v, reverse J^T w, both launched
afresh through the problem, so the comparison does not depend on the other oracles' launches.
"""
from __future__ import annotations

import numpy as np

from harness.model import Case, OracleVerdict
from harness.oracles.expected import check_expected_values
from harness.oracles.tolerance import resolve_tolerance


def _tolerance(case: Case, dtype: str):
    values = case.check.values or {}
    return resolve_tolerance(dtype, values.get("rtol"), values.get("atol"))


def gradient_values_verdict(case: Case, mode: str, problem, chosen: dict | None) -> OracleVerdict | None:
    """J v (forward) or J^T w (reverse) for the case's chosen shadows, against check.values[mode]."""
    expected = (case.check.values or {}).get(mode)
    if not expected:
        return None
    chosen = chosen or {}
    vars_ = problem.inputs if mode == "forward" else problem.outputs
    seed = {v.name: np.broadcast_to(np.asarray(chosen.get(v.name, 0.0), dtype=np.float64), v.shape).copy()
            for v in vars_}
    got = problem.jvp(seed) if mode == "forward" else problem.vjp(seed)
    return check_expected_values(mode, got, expected, _tolerance(case, problem.dtype))


def primal_values_verdict(case: Case, finals: dict[str, np.ndarray], dtype: str) -> OracleVerdict | None:
    """The primal launch's final values of named arrays against check.values.primal."""
    expected = (case.check.values or {}).get("primal")
    if not expected:
        return None
    return check_expected_values("primal", finals, expected, _tolerance(case, dtype))


def run_dtype(args) -> str:
    """The dtype a launch computes in, as KernelProblem says it: float32 when every float argument is."""
    floats = [np.dtype(a.value.dtype).name for a in args if a.spec.kind in ("array", "scalar")
              and np.issubdtype(np.dtype(getattr(a.value, "dtype", type(a.value))), np.floating)]
    return "float32" if floats and all(f == "float32" for f in floats) else "float64"


def primal_verdicts(case: Case, args, device_values, backend, kernel=None, config=None,
                    on_host: bool = False) -> list[OracleVerdict]:
    """Checks of a primal launch's results: an independent reference (numpy for broadcast/map, the
    kernel launched directly through numba; harness/checks/primal_reference.py) and the stated values.
    `on_host`: the launch was staged from host arrays (harness/problems/host_staging.py), so is the reference."""
    from harness.checks.primal_reference import direct_launch_verdict, elementwise_verdict
    # the arrays stay where the launch left them: the references compare with their module
    finals = {a.spec.name: v for a, v in zip(args, device_values) if a.spec.kind == "array"}
    dtype = run_dtype(args)
    out = []
    if kernel is not None and case.launch.style in ("broadcast", "map"):
        out.append(elementwise_verdict(kernel, args, finals[args[0].spec.name], dtype))
    elif kernel is not None and config is not None:
        out.append(direct_launch_verdict(kernel, config, args, finals, backend, dtype, on_host=on_host))
    stated = primal_values_verdict(case, finals, dtype)
    if stated is not None:
        out.append(stated)
    return out
