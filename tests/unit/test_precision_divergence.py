"""The FD oracle tells a wrong derivative from a float32 program that branches apart from its
float64 twin (cases/precision-tie.yaml, reduced from fuzz seed 1974)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run_at(tmp_path: Path, dtype: str):
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    (tmp_path / "kernels").mkdir()
    (tmp_path / "cases").mkdir()
    shutil.copy(ROOT / "kernels/precision_tie.py", tmp_path / "kernels")
    case = (ROOT / "cases/precision-tie.yaml").read_text().replace("dtype: float64", f"dtype: {dtype}")
    (tmp_path / "cases/precision-tie.yaml").write_text(case)
    [loaded] = load_case_file(tmp_path / "cases/precision-tie.yaml", tmp_path)
    runner = Runner(tmp_path, "sim")
    return {run.mode: runner.execute(run) for run in expand_runs(loaded, "sim")}


def test_float32_branch_flip_is_named_and_not_a_fuzz_finding(tmp_path, launching_backend):
    if launching_backend.name != "sim":
        pytest.skip("the flip is the simulator's: Python's math keeps float64 where a GPU rounds to float32")
    from harness.fuzz.campaign import classify
    from harness.oracles.checks import PRECISION_DIVERGES
    outcomes = _run_at(tmp_path, "float32")
    for mode, outcome in outcomes.items():
        assert outcome.state == "FAIL", (mode, outcome.state, outcome.message)
        assert PRECISION_DIVERGES in outcome.message and "float32 " in outcome.message
        assert classify(outcome)[0] == "inconclusive"


def test_float64_run_of_the_same_kernel_passes(tmp_path, launching_backend):
    if launching_backend.name != "sim":
        pytest.skip("runs on the simulator")
    outcomes = _run_at(tmp_path, "float64")
    assert {m: o.state for m, o in outcomes.items()} == {"forward": "PASS", "reverse": "PASS"}
