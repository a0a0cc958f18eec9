"""A derivative launch that leaves other primal values than the primal launch is reported as that,
first, and no derivative is judged: finite differences of the one program and AD of the other
would blame a derivative for a primal that differs (a GPU compiler gave two kernels with the same
`math.remainder(math.copysign(x, x), c)` different results: GPU fuzz seed 1652)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.checks.primal_reference import NOT_JUDGED

from tests.unit.test_kernel_problem import _primal_disturbed
from tests.unit.test_relations import BrokenEngine

ROOT = Path(__file__).resolve().parents[2]


def _axpy_runs(mode: str):
    from harness.cases import expand_runs, load_case_file
    return [run for case in load_case_file(ROOT / "cases" / "axpy.yaml", ROOT) for run in expand_runs(case, "sim")
            if run.mode == mode and run.dtype == "float64"]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_derivative_launch_with_another_primal_is_not_judged(launching_backend, monkeypatch, mode):
    if launching_backend.name != "sim":
        pytest.skip("the broken engine wraps the simulator's")
    from harness.execution.runner import Runner
    runner = Runner(ROOT, "sim")
    honest = runner.execute(_axpy_runs(mode)[0])
    assert honest.state == "PASS", honest.message
    real_engine = runner.engine
    monkeypatch.setattr(runner, "engine", lambda options, name="bundled": BrokenEngine(real_engine(options, name),
                                                                                       _primal_disturbed))
    got = runner.execute(_axpy_runs(mode)[0])
    assert got.state == "FAIL"
    assert got.message.startswith("primal-state") and NOT_JUDGED in got.message, got.message
    judged = {v.name for v in got.oracles}
    assert "primal-state" in judged and not judged & {"fd-forward", "fd-reverse", "dot", "zero"}, judged
    assert mode in got.sources, "the derivative kernel's generated source goes with the verdict"


def test_the_fuzzer_files_it_as_a_primal_finding_not_a_wrong_gradient():
    from types import SimpleNamespace
    from harness.fuzz.campaign import classify
    from harness.policy import State
    message = f"primal-state: derivative launch left primal arrays differing from a primal launch (rel err 0.185), {NOT_JUDGED}: ..."
    assert classify(SimpleNamespace(state=State.FAIL, message=message, error=None))[0] == "primal-differs"
    wrong = "fd-forward: J v differs from finite differences at out[9]"
    assert classify(SimpleNamespace(state=State.FAIL, message=wrong, error=None))[0] == "wrong-gradient"
