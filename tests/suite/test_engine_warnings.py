"""Warnings of Warp's and Taichi's own code stay in the run record, not on the terminal."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from harness.execution.engine_warnings import kept_in

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_engine(tmp_path, monkeypatch):
    package = tmp_path / "fakeengine"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent("""
        import warnings
        def launch():
            warnings.warn("old spelling, use the new one", DeprecationWarning)
            return 1
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    return importlib.import_module("fakeengine")


def test_the_engines_warnings_are_recorded_once_and_others_pass_on(fake_engine):
    record = []
    with pytest.warns(UserWarning, match="the harness's own"):
        with kept_in("fakeengine", record):
            fake_engine.launch()
            fake_engine.launch()                                  # the same warning again: kept once
            warnings.warn("the harness's own", UserWarning)
    assert record == ["DeprecationWarning: old spelling, use the new one (fakeengine/__init__.py:4)"]


def test_a_run_that_raises_keeps_its_warnings(fake_engine):
    # a refusal is an exception out of the run: the warnings raised before it are still the run's
    record = []
    with pytest.raises(RuntimeError):
        with kept_in("fakeengine", record):
            fake_engine.launch()
            raise RuntimeError("refused")
    assert len(record) == 1 and record[0].startswith("DeprecationWarning: old spelling")


def test_the_bundled_engine_keeps_nothing(fake_engine):
    record = []
    with pytest.warns(DeprecationWarning):
        with kept_in("bundled", record):
            fake_engine.launch()
    assert record == []


def test_the_report_shows_a_runs_engine_warnings():
    try:
        from test_report import outcome
    except ImportError:
        from tests.unit.test_report import outcome
    from harness.report.render import render_html
    run = outcome("c1", "forward", "PASS", engine_warnings=["DeprecationWarning: x (taichi/_lib/utils.py:70)"])
    run.engine = "taichi"
    assert "taichi warned: DeprecationWarning: x (taichi/_lib/utils.py:70)" in render_html([run])


@pytest.mark.skipif(importlib.util.find_spec("taichi") is None,
                    reason="needs taichi")
def test_taichi_warnings_are_in_the_results_not_the_terminal(tmp_path):
    # Taichi 1.7's import calls locale.getdefaultlocale, deprecated since Python 3.11
    results = tmp_path / "r.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "NUMBA_ENABLE_CUDASIM")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "pytest", "cases/piecewise.yaml", "--backend", "sim",
                           "--engine", "taichi", "-q", "-p", "no:cacheprovider", "--results", str(results),
                           "-k", "forward-float32"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    runs = [json.loads(line) for line in results.read_text().splitlines() if '"type":"run"' in line.replace(" ", "")]
    kept = [w for r in runs for w in r.get("engine_warnings", [])]
    if sys.version_info >= (3, 11):
        assert any("getdefaultlocale" in w and "taichi/" in w for w in kept), kept
    assert "DeprecationWarning" not in done.stdout and "warnings summary" not in done.stdout
