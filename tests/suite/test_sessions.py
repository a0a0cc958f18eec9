"""results are never lost, clobbered or mixed up.

Each test runs real pytest sessions (subprocesses, simulator) over a two-case project in tmp_path:
- a partial run (one run id) lands beside the last full run, never over it, and the sessions
  index lists the full run first;
- two concurrent sessions appending to one --results file lose no record, and each session's
  report shows only its own runs;
- a crashed xdist worker's run in flight is recorded as ERROR with the category `crash`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

KERNELS = '''
import os
from numba import cuda


def double(x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = 2.0 * x[i]


def crash(x):
    if cuda.threadIdx.x == 0 and x[0] == 0.0:
        os._exit(3)                   # the process dies mid-run, as a segfault would
'''

CASE = '''
id: {id}
title: "{id}"
kernel: kernels/k.py:{kernel}
launch: {{threads: 8, block: 8}}
args:
{args}
modes: [primal]
dtypes: [float32, float64]
'''
DOUBLE_ARGS = ("  x: {array: {shape: [8], dtype: float64, init: normal}, activity: const}\n"
               "  y: {array: {shape: [8], dtype: float64, init: zeros}, activity: const}")
CRASH_ARGS = "  x: {array: {shape: [8], dtype: float64, init: zeros}, activity: const}"


def make_project(tmp_path: Path, crash: bool = False) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNELS)
    (tmp_path / "cases").mkdir()
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.session.plugin"]\n')
    for n in range(2):
        (tmp_path / "cases" / f"c{n}.yaml").write_text(CASE.format(id=f"c{n}", kernel="double", args=DOUBLE_ARGS))
    if crash:
        (tmp_path / "cases" / "crash.yaml").write_text(CASE.format(id="crash", kernel="crash", args=CRASH_ARGS))
    return tmp_path


def pytest_cmd(project: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *args, "--backend", "sim", "-p", "no:cacheprovider", "-q",
            "--rootdir", str(project)]


def env() -> dict:
    e = dict(os.environ, PYTHONPATH=str(ROOT), HARNESS_BACKEND="sim")
    e.pop("NUMBA_ENABLE_CUDASIM", None)
    e["HARNESS_CACHE_DIR"] = str(ROOT / ".cache" / "harness" / "generated")
    return e


def run(project: Path, *args: str, check_rc=(0,)) -> subprocess.CompletedProcess:
    done = subprocess.run(pytest_cmd(project, *args), cwd=project, env=env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode in check_rc, done.stdout + done.stderr
    return done


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_partial_run_goes_beside_the_last_full_run(tmp_path):
    project = make_project(tmp_path)
    full = run(project, "cases")
    partial = run(project, "cases/c0.yaml::primal-float32")
    sessions = sorted((project / "reports" / "sessions").iterdir())
    assert len(sessions) == 2, sessions
    full_dir = next(d for d in sessions if d.name in full.stdout)
    partial_dir = next(d for d in sessions if d.name in partial.stdout)
    full_runs = [r for r in records(full_dir / "results.jsonl") if r["type"] == "run"]
    assert len(full_runs) == 4 and (full_dir / "index.html").is_file()
    assert len([r for r in records(partial_dir / "results.jsonl") if r["type"] == "run"]) == 1
    meta = [r for r in records(full_dir / "results.jsonl") if r["type"] == "meta"][0]
    assert meta["scope"] == "full"
    assert [r for r in records(partial_dir / "results.jsonl") if r["type"] == "meta"][0]["scope"] == "partial"
    index = (project / "reports" / "index.html").read_text()
    latest = index.split("All sessions")[0]
    assert full_dir.name in latest and partial_dir.name not in latest
    assert partial_dir.name in index
    # the terminal ends with the session report's path and its summary line
    assert f"reports/sessions/{partial_dir.name}/index.html: 1 run on sim: 1 PASS" in partial.stdout


def test_concurrent_sessions_on_one_results_file_lose_nothing(tmp_path):
    project = make_project(tmp_path)
    shared = project / "shared.jsonl"
    procs = [subprocess.Popen(pytest_cmd(project, "cases", "--results", str(shared), "--html",
                                         str(project / f"r{n}.html")),
                              cwd=project, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for n in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    lines = records(shared)
    runs = [r for r in lines if r["type"] == "run"]
    assert len(runs) == 8 and len({r["session"] for r in runs}) == 2
    assert len([r for r in lines if r["type"] == "meta"]) == 2
    for n in range(2):
        assert "4 runs on sim: 4 PASS" in outs[n]                   # each report: its own session only
    # a later session appends; nothing is truncated
    run(project, "cases/c1.yaml", "--results", str(shared), "--html", "")
    assert len([r for r in records(shared) if r["type"] == "run"]) == 10


def test_crashed_worker_run_is_recorded_as_error_crash(tmp_path):
    pytest.importorskip("xdist")
    project = make_project(tmp_path, crash=True)
    results = project / "r.jsonl"
    done = run(project, "cases", "-n", "2", "--results", str(results), "--html", str(project / "r.html"),
               check_rc=(1,))
    runs = [r for r in records(results) if r["type"] == "run"]
    crashed = [r for r in runs if r["case_id"] == "crash"]
    assert len(runs) == 6, done.stdout
    assert {r["state"] for r in crashed} == {"ERROR"}
    assert all(r["error"]["category"] == "crash" and r["error"]["type"] == "WorkerCrash" for r in crashed)
    assert "6 runs on sim: 4 PASS, 2 ERROR" in done.stdout
    assert "crash" in (project / "r.html").read_text()


def _outcome(run_id: str, state: str = "PASS") -> dict:
    from harness.model import Outcome
    return Outcome(run_id=run_id, case_id="c", source="cases/c.yaml", variant=None, mode="primal",
                   dtype=None, backend="sim", state=state).to_json()


def test_index_lists_the_latest_complete_full_run_first(tmp_path):
    from harness.session.output import SessionOutput
    from harness.session.folders import latest_full, list_sessions

    def session(scope, finish=True, state="PASS"):
        out = SessionOutput(root=tmp_path, cwd=tmp_path, backend="sim", results=None, html=None,
                            scope=scope, command=["pytest", scope])
        out.record("cases/c.yaml::primal", _outcome("cases/c.yaml::primal", state))
        if finish:
            out.finish(0)
        return out

    full = session("full", state="FAIL")
    partial = session("partial")
    killed = session("full", finish=False)          # a full run killed half-way is not "the latest full run"
    from harness.session.folders import write_index
    write_index(tmp_path / "reports")               # (the killed session never rewrote it)
    listed = list_sessions(tmp_path / "reports")
    assert [s.session for s in listed] == [killed.session, partial.session, full.session]
    assert latest_full(tmp_path / "reports").session == full.session
    assert listed[2].counts == {"FAIL": 1} and listed[1].counts == {"PASS": 1}
    index = (tmp_path / "reports" / "index.html").read_text()
    latest, everything = index.split("All sessions")
    assert full.session in latest and partial.session not in latest and killed.session not in latest
    assert "interrupted or running" in everything and "1 run: 1 FAIL" in latest
    last = partial.summary[-1]
    assert last.startswith(f"reports/sessions/{partial.session}/index.html: 1 run") and last.endswith(": 1 PASS")


def test_reports_written_to_named_files_are_listed_on_the_index(tmp_path):
    """tox's `--results reports/sim.jsonl --html reports/sim.html` is on the index
    beside the session folders, with a working link and its counts."""
    project = make_project(tmp_path)
    named = run(project, "cases", "--results", "reports/sim.jsonl", "--html", "reports/sim.html")
    assert "listed in reports/index.html; results: reports/sim.jsonl" in named.stdout
    run(project, "cases/c0.yaml")                                 # a default session rewrites the index
    index = (project / "reports" / "index.html").read_text()
    section = index.split("Reports written to named files")[1].split("All sessions")[0]
    assert '<a href="sim.html">sim.html</a>' in section and '<a href="sim.jsonl">results</a>' in section
    assert "4 runs: 4 PASS" in section and "exit 0" in section
    assert (project / "reports" / "sim.html").is_file()
