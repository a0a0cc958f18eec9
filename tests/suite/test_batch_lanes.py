"""The second, independent check that batched lanes stay apart (harness/checks/batch_lanes.py): it
holds on the unmutated engine, and an engine that folds a batch's lanes together (the
`fold-batch-lanes` mutant: every lane's adjoint added into lane 0's shadow, which one-lane launches
never show) fails both it and rel-batch, while finite differences and the dot test pass."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _verdicts(case: str, mode: str, backend_name: str, seams=None):
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    [run] = [r for c in load_case_file(ROOT / case, ROOT) for r in expand_runs(c, backend_name)
             if r.mode == mode and r.dtype == "float64" and not c.variant]
    runner = Runner(ROOT, backend_name, seams=seams) if seams is not None else Runner(ROOT, backend_name)
    return {v.name: v for v in runner.execute(run).oracles}


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_synthesized_lanes_hold_on_the_engine(mode, launching_backend):
    verdicts = _verdicts("cases/axpy.yaml", mode, launching_backend.name)
    lanes = verdicts["batch-lanes"]
    assert lanes.verdict == "pass" and "batched" in lanes.message, lanes.message
    assert lanes.metrics["width"] == 2 and lanes.metrics["max_rel_err"] < 1e-12


def test_folded_lanes_fail_both_independent_checks(launching_backend):
    if launching_backend.name != "sim":
        pytest.skip("the mutants run on the simulator (harness/selftest/mutants.py)")
    from harness.selftest.mutants import get_mutant
    verdicts = _verdicts("cases/axpy.yaml", "reverse", launching_backend.name, get_mutant("fold-batch-lanes").seams())
    assert verdicts["rel-batch"].verdict == "fail", verdicts["rel-batch"].message
    assert verdicts["batch-lanes"].verdict == "fail", verdicts["batch-lanes"].message
    # the oracles that launch one lane do not see it: why a second check was needed
    assert verdicts["dot"].verdict == "pass" and verdicts["fd-reverse"].verdict == "pass"


def test_a_batched_case_is_judged_by_its_own_launches_not_a_synthesized_batch():
    from harness.checks.batch_lanes import synthesized_lane_verdict

    class Batched:
        width = 3
    assert synthesized_lane_verdict(Batched(), "reverse", np.random.default_rng(0)) is None
    assert synthesized_lane_verdict(Batched(), "primal", np.random.default_rng(0)) is None
