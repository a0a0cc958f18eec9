"""The second, independent check of an Active scalar's adjoint (harness/checks/active_sum.py): it holds
on the unmutated engine, and a float32 accumulation of the adjoint (the `float32-active-sum`
mutant, which the dot test and finite differences do not see) fails both it and rel-active."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _reverse_float64(backend_name: str, seams=None):
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    [run] = [r for c in load_case_file(ROOT / "cases/axpy.yaml", ROOT) for r in expand_runs(c, backend_name)
             if r.mode == "reverse" and r.dtype == "float64"]
    runner = Runner(ROOT, backend_name, seams=seams) if seams is not None else Runner(ROOT, backend_name)
    return {v.name: v for v in runner.execute(run).oracles}


def test_active_sum_holds_on_the_engine(launching_backend):
    verdicts = _reverse_float64(launching_backend.name)
    assert verdicts["active-sum"].verdict == "pass", verdicts["active-sum"].message
    assert verdicts["active-sum"].metrics["worst_ratio"] < 1e-2     # far inside: not a tolerance tuned to pass


def test_a_float32_accumulation_of_the_active_scalar_fails_both_independent_checks(launching_backend):
    if launching_backend.name != "sim":
        pytest.skip("the mutants run on the simulator (harness/selftest/mutants.py)")
    from harness.selftest.mutants import get_mutant
    verdicts = _reverse_float64(launching_backend.name, get_mutant("float32-active-sum").seams())
    assert verdicts["rel-active"].verdict == "fail", verdicts["rel-active"].message
    assert verdicts["active-sum"].verdict == "fail", verdicts["active-sum"].message
    assert "re-accumulated in float64" in verdicts["active-sum"].message
    # the oracles that do not see it: why a second check was needed
    assert verdicts["dot"].verdict == "pass" and verdicts["fd-reverse"].verdict == "pass"


def test_forward_runs_and_kernels_without_active_scalars_have_no_active_sum():
    from harness.checks.active_sum import active_sum_verdict
    import numpy as np

    class NoScalar:
        inputs, outputs, dtype = [], [], "float64"
    assert active_sum_verdict(NoScalar(), "reverse", np.random.default_rng(0)) is None
    assert active_sum_verdict(NoScalar(), "forward", np.random.default_rng(0)) is None
