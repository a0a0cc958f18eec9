"""The `harness` command line: help that matches what is accepted, tag filters, and --baseline
deciding the exit status (harness report in-process; pytest and harness run in a subprocess)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import build_parser, main
from harness.model import Outcome
from harness.results.store import ResultsWriter
from harness.session.cli import tag_expression

ROOT = Path(__file__).resolve().parents[2]

try:
    from test_report import outcome
except ImportError:                                      # tests/ collected as a package
    from tests.unit.test_report import outcome


def subcommand_parsers():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return dict(action.choices)


@pytest.mark.parametrize("name", sorted(subcommand_parsers()))
def test_help_names_only_options_the_command_accepts(name):
    # `harness mutate --help` documented --cases, which mutate rejects
    sub = subcommand_parsers()[name]
    accepted = {option for action in sub._actions for option in action.option_strings}
    # options in the help's own example command lines (`harness NAME ... --option`); mentions of
    # other commands' options (`harness report --bench`) are not this command's
    examples = [line.split(f"harness {name} ", 1)[1] for line in sub.format_help().splitlines()
                if f"harness {name} " in line]
    mentioned = {o for line in examples for o in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line.split("#")[0])}
    assert mentioned <= accepted, f"harness {name} --help mentions {sorted(mentioned - accepted)}"


def test_run_help_shows_defaults():
    text = subcommand_parsers()["run"].format_help()
    for default in ("(default: auto)", "default: index.html in the session's folder",
                    "default: results.jsonl in the session's folder", "default: all)"):
        assert default in " ".join(text.split()), default


def test_tag_expression_matches_the_plugins_markers():
    assert tag_expression(["seed-bug"]) == "seed_bug"
    assert tag_expression(["atomics", "nested-ad"]) == "atomics or nested_ad"


def test_run_hands_tags_and_baseline_to_pytest(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(pytest, "main", lambda argv, plugins=(): seen.setdefault("argv", argv) and 0)
    (tmp_path / "cases").mkdir()
    (tmp_path / "conftest.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "cases/a.yaml", "-t", "atomics", "--tag", "seed-bug", "--baseline", "old.jsonl",
                 "-n", "0", "--backend", "sim"]) == 0
    argv = seen["argv"]
    assert argv[argv.index("-m") + 1] == "atomics or seed_bug"
    assert argv[argv.index("--baseline") + 1] == str(tmp_path / "old.jsonl")


def write_results(path: Path, runs: list[Outcome]) -> Path:
    with ResultsWriter(path) as writer:
        writer.write_meta({"backend": "sim"})
        for run in runs:
            writer.append(run)
    return path


def test_report_fails_on_new_failures_only(tmp_path, capsys):
    old = write_results(tmp_path / "old.jsonl", [outcome("a"), outcome("b", state="FAIL")])
    same = write_results(tmp_path / "same.jsonl", [outcome("a"), outcome("b", state="FAIL")])
    worse = write_results(tmp_path / "worse.jsonl", [outcome("a", state="ZERO"), outcome("b", state="FAIL")])
    html = str(tmp_path / "index.html")
    assert main(["report", str(same), "-o", html, "--baseline", str(old)]) == 0
    assert main(["report", str(worse), "-o", html, "--baseline", str(old)]) == 1
    out = capsys.readouterr().out
    assert "baseline: 1 new failure," in out
    assert "new failure: cases/a.yaml::reverse-float32 [sim] PASS -> ZERO" in out
    assert main(["report", str(worse), "-o", html]) == 0            # no baseline: a report only


# ----------------------------------------------------------------------------- pytest --baseline

FAILING_CASE = """\
id: wrongly-expects-an-error
title: a case whose run fails (it expects an error the kernel never raises)
kernel: kernels/elementwise.py:scale
launch: {threads: 8, block: 8}
args:
  out:   {array: {shape: [8], dtype: float64, init: zeros}, activity: duplicated}
  alpha: {scalar: {value: 2.0, dtype: float64}, activity: active}
  x:     {array: {shape: [8], dtype: float64, init: normal}, activity: duplicated}
modes: [forward]
expect: {error: {type: KernelError}}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    (root / "cases").mkdir()
    (root / "kernels").mkdir()
    (root / "kernels" / "elementwise.py").write_text((ROOT / "kernels" / "elementwise.py").read_text())
    (root / "cases" / "bad.yaml").write_text(FAILING_CASE)
    return root


def pytest_session(project: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_ENABLE_CUDASIM": "1", "HARNESS_BACKEND": "sim"}
    env.pop("PYTEST_XDIST_WORKER", None)
    argv = [sys.executable, "-m", "pytest", "cases/bad.yaml", "-p", "harness.session.plugin", "-p", "no:cacheprovider",
            "--backend", "sim", "--results", "now.jsonl", "--html", "", "-q", *extra]
    return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=300)


def run_record(state: str) -> Outcome:
    return outcome("wrongly-expects-an-error", "forward", state, dtype=None, tags=[],
                   run_id="cases/bad.yaml::forward", source="cases/bad.yaml")


def test_pytest_baseline_fails_on_a_new_failure_and_passes_on_a_known_one(project):
    was_passing = write_results(project / "was-passing.jsonl", [run_record("PASS")])
    new = pytest_session(project, "--baseline", "was-passing.jsonl")
    assert new.returncode == 1, new.stdout + new.stderr
    assert "new failure: cases/bad.yaml::forward [sim] PASS -> FAIL" in new.stdout
    assert "harness: backend sim" in new.stdout

    was_failing = write_results(project / "was-failing.jsonl", [run_record("FAIL")])
    known = pytest_session(project, "--baseline", "was-failing.jsonl")
    assert known.returncode == 0, known.stdout + known.stderr
    assert "baseline: 0 new failures" in known.stdout
    assert "no new failures: the 1 failing run(s) failed in the baseline too" in known.stdout


# ----------------------------------------------------------------------------- the README's Python snippet

def readme_python_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Using the engine from Python"):]
    return section[section.index("```python\n") + len("```python\n"):section.index("\n```", section.index("```python"))]


def test_readme_python_snippet_runs_as_written_without_a_gpu():
    # the snippet failed with "numba was imported before the 'sim' backend was chosen";
    # HARNESS_BACKEND=sim, as the README says to run it, now picks the simulator before numba loads
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "PYTEST_XDIST_WORKER")}
    env.update(HARNESS_BACKEND="sim", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", readme_python_snippet()], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    alpha_adjoint, dx = done.stdout.split(" ", 1)
    assert float(alpha_adjoint) == pytest.approx(100.0, rel=1e-5)        # sum(x), x = linspace(0, 1, 200)
    assert dx.strip() == "[2.5 2.5 2.5]"


def test_auto_backend_is_announced_with_the_reason(monkeypatch):
    from harness import backends
    monkeypatch.setattr(backends, "gpu_available", lambda: False)
    assert backends.announce("auto", "sim") == "backend sim (picked by auto: no GPU visible: numba's CUDA simulator)"
    assert backends.announce("ptx", "ptx") == "backend ptx"
