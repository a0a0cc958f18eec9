"""A malformed case file is one ERROR item for that file: every other case
still runs, the results record it under "case file error", and `harness run` counts it. Each test
runs a real pytest session (simulator) over a tiny project in tmp_path.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

KERNEL = '''\
from numba import cuda


def scale(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 2.0 * x[i]
'''

GOOD = """\
id: ID
kernel: kernels/k.py:scale
launch: {threads: 8, block: 8}
args:
  out: {array: {shape: [8], dtype: float64}, activity: duplicated}
  x: {array: {shape: [8], dtype: float64, init: normal}, activity: duplicated}
modes: [forward, reverse]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNEL)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "good.yaml").write_text(GOOD.replace("ID", "good"))
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.session.plugin"]\n')
    return tmp_path


def run_session(project: Path, *argv: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    results = project / "results.jsonl"
    proc = subprocess.run(list(argv) + ["--results", str(results)], cwd=project, capture_output=True,
                          text=True, timeout=240, env={**os.environ, "PYTHONPATH": str(REPO)})
    records = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    return proc, [r for r in records if "run_id" in r]


def pytest_argv(project: Path) -> list[str]:
    return [sys.executable, "-m", "pytest", "cases", "-q", "-p", "no:cacheprovider",
            "--backend", "sim", "--rootdir", str(project), "--html", ""]


def test_a_malformed_file_is_one_error_item_and_the_others_run(project):
    (project / "cases" / "bad.yaml").write_text("id: bad\nkernel: kernels/k.py:scale\nargs: [1, 2\n")
    proc, records = run_session(project, *pytest_argv(project))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Interrupted" not in out and "error during collection" not in out
    assert "2 passed" in out and "1 failed" in out, out
    assert "cases/bad.yaml:4: key 'args[2]': invalid YAML" in out        # the loader's message, with its line
    states = {r["run_id"]: r["state"] for r in records}
    assert states == {"cases/good.yaml::forward": "PASS", "cases/good.yaml::reverse": "PASS",
                      "cases/bad.yaml::load": "ERROR"}
    bad = next(r for r in records if r["source"] == "cases/bad.yaml")
    assert bad["error"]["type"] == "CaseError"
    from harness.model import Outcome
    from harness.report.categories import categorize_outcome, load_rules
    assert categorize_outcome(Outcome.from_json(bad), load_rules()) == "case file error"


def test_harness_run_counts_the_malformed_file(project):
    """Before: "2 runs: 2 PASS" with exit 1, the malformed file left out."""
    (project / "cases" / "bad.yaml").write_text(GOOD.replace("ID", "bad").replace("float64}", "float65}", 1))
    proc, records = run_session(project, sys.executable, "-m", "harness.cli", "run", "cases",
                                "--backend", "sim", "-n", "0", "-o", str(project / "report.html"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "3 runs on sim: 2 PASS, 1 ERROR" in out, out
    assert len(records) == 3


def test_duplicate_case_ids_are_refused_naming_both_files(project):
    """Before: both files ran under one id and the report merged them into one row."""
    (project / "cases" / "other.yaml").write_text(GOOD.replace("ID", "good"))
    proc, records = run_session(project, *pytest_argv(project))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert ("cases/other.yaml:1: key 'id': case id 'good' is already used by cases/good.yaml" in out), out
    assert {r["run_id"]: r["state"] for r in records} == {
        "cases/good.yaml::forward": "PASS", "cases/good.yaml::reverse": "PASS", "cases/other.yaml::load": "ERROR"}
