"""Fault isolation of the adapters (harness/adapters/isolation.py): a fault inside one Warp run is ONE
ERROR record naming the run, and the next run passes. On the H200 four Taichi illegal addresses
turned 113 runs into ERRORs and 42 into XFAILs; here the fault is planted
(HARNESS_PLANT_ENGINE_FAULT) so that the CPU shows the same. Each test runs a real pytest session
(simulator backend, Warp's CPU device) over a tiny project in tmp_path: a case whose kernel faults,
then a healthy case.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("warp")

REPO = Path(__file__).resolve().parents[2]

KERNELS = '''\
from numba import cuda


def scale_faulty(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 2.0 * x[i]


def scale_dying(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 4.0 * x[i]


def scale_healthy(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 3.0 * x[i] * x[i]
'''

CASE = """\
id: ID
kernel: kernels/k.py:KERNEL
launch: {threads: 8, block: 8}
args:
  out: {array: {shape: [8], dtype: float64}, activity: duplicated}
  x: {array: {shape: [8], dtype: float64, init: normal}, activity: duplicated}
modes: [reverse]
"""

# A known wrong derivative (strict xfail) must not swallow a fault: a dead context is no wrong answer.
XFAIL = """\
engines:
  warp: {expect: {xfail: {reason: "planted: stands for a known upstream bug"}}}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNELS)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "a-faulty.yaml").write_text(
        CASE.replace("ID", "a-faulty").replace("KERNEL", "scale_faulty") + XFAIL)
    (tmp_path / "cases" / "b-dying.yaml").write_text(CASE.replace("ID", "b-dying").replace("KERNEL", "scale_dying"))
    (tmp_path / "cases" / "c-healthy.yaml").write_text(
        CASE.replace("ID", "c-healthy").replace("KERNEL", "scale_healthy"))
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.session.plugin"]\n')
    return tmp_path


def run_session(project: Path, isolate: str, plant: str) -> dict[str, dict]:
    """One pytest session, in ONE process (no -n): the runs' records by run id."""
    results = project / "results.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HARNESS_ISOLATE_ENGINES": isolate,
           "HARNESS_PLANT_ENGINE_FAULT": plant, "HARNESS_CACHE_DIR": str(project / ".gen")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "cases", "-q", "-p", "no:cacheprovider",
                           "--backend", "sim", "--engine", "warp", "--rootdir", str(project),
                           "--results", str(results), "--html", ""],
                          cwd=project, capture_output=True, text=True, timeout=400, env=env)
    records = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    runs = {r["run_id"]: r for r in records if "run_id" in r}
    assert len(runs) == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    return runs


FAULTY = "cases/a-faulty.yaml::reverse@warp"
DYING = "cases/b-dying.yaml::reverse@warp"
HEALTHY = "cases/c-healthy.yaml::reverse@warp"
PLANTS = "sticky:scale_faulty,segfault:scale_dying"


def test_a_fault_is_one_error_naming_the_run_and_the_next_runs_pass(project):
    """Isolated (as on cuda): a sticky fault and a process that dies are one ERROR each; then PASS."""
    runs = run_session(project, isolate="1", plant=PLANTS)
    faulty = runs[FAULTY]
    assert faulty["state"] == "ERROR", faulty["message"]        # not XFAIL: the case's xfail is no excuse
    assert faulty["message"].startswith("fault: RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS"), faulty["message"]
    assert "warp, reverse run" in faulty["message"] and faulty["error"]["category"] == "fault"
    assert faulty["engine"] == "warp"
    dying = runs[DYING]
    assert dying["state"] == "ERROR", dying["message"]
    assert dying["message"].startswith("fault: the process running this warp reverse run died with SIGSEGV"), \
        dying["message"]
    assert dying["error"]["type"] == "EngineProcessDied" and dying["error"]["category"] == "fault"
    assert runs[HEALTHY]["state"] == "PASS", runs[HEALTHY]["message"]


def test_without_isolation_the_planted_fault_poisons_the_next_run(project):
    """The control: the planted fault is sticky, so isolation is what saves the healthy run."""
    runs = run_session(project, isolate="0", plant="sticky:scale_faulty")
    assert runs[FAULTY]["state"] == "ERROR"
    for later in (DYING, HEALTHY):
        assert runs[later]["state"] == "ERROR" and runs[later]["message"].startswith("fault: "), \
            runs[later]["message"]


def test_fault_words_and_isolation_setting():
    from harness.adapters.isolation import fault_text, isolate_engine_runs
    from harness.model import ErrorRecord
    assert fault_text(ErrorRecord("CUDARuntimeError", "cudaErrorIllegalAddress: an illegal memory access"))
    assert fault_text(ErrorRecord("RuntimeError", "[cuda_driver.h:operator()@92] CUDA Error "
                                  "CUDA_ERROR_ILLEGAL_ADDRESS: ... (cuModuleLoadDataEx)"))
    assert fault_text(ErrorRecord("AssertionError", "values differ at out[3]")) is None
    os.environ.pop("HARNESS_ISOLATE_ENGINES", None)
    assert isolate_engine_runs("cuda") and not isolate_engine_runs("sim")
    os.environ["HARNESS_ISOLATE_ENGINES"] = "sometimes"
    try:
        with pytest.raises(ValueError, match="HARNESS_ISOLATE_ENGINES='sometimes'"):
            isolate_engine_runs("cuda")
    finally:
        del os.environ["HARNESS_ISOLATE_ENGINES"]


def test_an_engine_xfail_covers_wrong_derivatives_not_exceptions():
    from harness.adapters.isolation import judge_engine_fault
    from harness.model import ErrorRecord, Outcome

    def outcome(error):
        return Outcome(run_id="cases/c.yaml::reverse@taichi", case_id="c", source="cases/c.yaml", variant=None,
                       mode="reverse", dtype=None, backend="sim", state="XFAIL", message="known bug", error=error)
    wrong = outcome(None)                                   # the oracles found the known wrong derivative
    judge_engine_fault("taichi", wrong)
    assert wrong.state == "XFAIL"
    crashed = outcome(ErrorRecord("TaichiSyntaxError", "Return inside non-static if/for is not supported"))
    judge_engine_fault("taichi", crashed)
    assert crashed.state == "ERROR" and crashed.message.startswith("TaichiSyntaxError: Return inside")
    stated = outcome(ErrorRecord("RuntimeError", "a known crash"))
    judge_engine_fault("taichi", stated, expect_state="ERROR")
    assert stated.state == "XFAIL"
    bundled = outcome(ErrorRecord("RuntimeError", "x"))
    judge_engine_fault("bundled", bundled)
    assert bundled.state == "XFAIL"


CRASH = """\
engines:
  warp: {expect: {xfail: {reason: "planted: stands for an engine that aborts", crash: true}}}
"""


def test_a_known_crash_runs_in_its_own_process_and_is_its_xfail(project):
    """`crash: true`: the run is isolated even where adapter runs are not (isolate=0, the CPU's
    default), its death is the XFAIL, and the session goes on to the healthy run."""
    (project / "cases" / "b-dying.yaml").write_text(
        CASE.replace("ID", "b-dying").replace("KERNEL", "scale_dying") + CRASH)
    runs = run_session(project, isolate="0", plant="abort:scale_dying")
    dying = runs[DYING]
    assert dying["state"] == "XFAIL", dying["message"]
    assert dying["message"].startswith("known bug (planted: stands for an engine that aborts): the process "
                                       "running this warp reverse run died with SIGABRT"), dying["message"]
    assert runs[HEALTHY]["state"] == "PASS", runs[HEALTHY]["message"]


def test_a_known_crash_that_does_not_happen_fails():
    """A crash xfail judged in a surviving process: another failure is not the known bug."""
    from harness.model import Expectation
    from harness.model import OracleVerdict
    from harness.execution.verdicts import judge
    crash = Expectation(kind="xfail", reason="aborts", crash=True)
    state, message = judge(crash, [OracleVerdict("fd-reverse", "fail", "values differ")], None)
    assert state == "FAIL" and "to kill the process running the run, but it survived with FAIL" in message
    assert judge(crash, [OracleVerdict("fd-reverse", "pass", "ok")], None)[0] == "XPASS"
