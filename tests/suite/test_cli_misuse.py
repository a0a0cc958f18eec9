"""misuse of the command line or environment is refused at start, one clear
line each, never a traceback or INTERNALERROR and never after the first run."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


def project(tmp_path: Path) -> Path:
    (tmp_path / "cases").mkdir()
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.session.plugin"]\n')
    (tmp_path / "cases" / "c.yaml").write_text("id: c\n")     # never loaded: the session stops first
    return tmp_path


def run_pytest(tmp_path: Path, *args: str, **env_changes) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("HARNESS_BACKEND", None)
    env.update(env_changes)
    return subprocess.run([sys.executable, "-m", "pytest", "cases", "-p", "no:cacheprovider", "-q",
                           "--rootdir", str(tmp_path), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def assert_one_line_refusal(done: subprocess.CompletedProcess, fragment: str) -> None:
    text = done.stdout + done.stderr
    assert done.returncode == 4, text                      # pytest's usage error
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and fragment in errors[0], text


def test_results_directory_is_refused(tmp_path):
    p = project(tmp_path)
    assert_one_line_refusal(run_pytest(p, "--backend", "sim", "--results", str(tmp_path)), "is a directory")


def test_results_under_a_file_is_refused(tmp_path):
    p = project(tmp_path)
    (tmp_path / "plain").write_text("")
    assert_one_line_refusal(run_pytest(p, "--backend", "sim", "--results", str(tmp_path / "plain" / "r.jsonl")),
                            "is not a directory")


def test_html_symlink_is_refused(tmp_path):
    p = project(tmp_path)
    (tmp_path / "target.html").write_text("keep")
    (tmp_path / "link.html").symlink_to(tmp_path / "target.html")
    assert_one_line_refusal(run_pytest(p, "--backend", "sim", "--results", str(tmp_path / "r.jsonl"),
                                       "--html", str(tmp_path / "link.html")), "symbolic link")


def _cuda_reason():
    from harness.backends.cuda_check import cuda_unavailable_reason
    return cuda_unavailable_reason(importlib.util.find_spec("cupy") is not None)


@pytest.mark.skipif(_cuda_reason() is None, reason="the cuda backend can run here")
def test_cuda_backend_that_cannot_run_here_is_one_line_before_collection(tmp_path):
    """no GPU, driver or cupy is one message and exit 4, not a CudaSupportError per
    run (the case file is not even valid: the session stops before collecting it)."""
    done = run_pytest(project(tmp_path), "--backend", "cuda")
    assert_one_line_refusal(done, "--backend cuda")
    assert "--backend sim" in done.stderr and "collected" not in done.stdout


def test_cuda_refusal_names_the_missing_piece_and_an_install_that_stays_editable(monkeypatch):
    from harness.backends import cuda_check
    monkeypatch.setattr(cuda_check, "_driver_problem", lambda: None)
    assert cuda_check.cuda_unavailable_reason(True) is None
    no_cupy = cuda_check.cuda_unavailable_reason(False)
    assert "needs cupy" in no_cupy and "pip install -e '.[gpu]'" in no_cupy
    monkeypatch.setattr(cuda_check, "_driver_problem", lambda: "the CUDA driver sees no GPU")
    assert "cannot run here: the CUDA driver sees no GPU" in cuda_check.cuda_unavailable_reason(True)


def test_unknown_backend_in_the_environment_is_refused(tmp_path):
    assert_one_line_refusal(run_pytest(project(tmp_path), HARNESS_BACKEND="bogus"), "HARNESS_BACKEND='bogus'")


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf"])
def test_bad_run_timeout_is_refused(tmp_path, value):
    assert_one_line_refusal(run_pytest(project(tmp_path), "--backend", "sim", HARNESS_RUN_TIMEOUT=value),
                            "HARNESS_RUN_TIMEOUT")


def test_harness_run_workers_must_be_a_number(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "-n", "abc"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "expected 'auto' or a whole number" in err and "Traceback" not in err


def test_harness_run_outside_the_project_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "not inside a harness project" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_report_output_onto_a_symlink_or_special_file_is_refused(tmp_path, capsys, kind):
    results = tmp_path / "r.jsonl"
    results.write_text("")
    target = tmp_path / "out.html"
    if kind == "symlink":
        (tmp_path / "elsewhere.html").write_text("keep")
        target.symlink_to(tmp_path / "elsewhere.html")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    assert main(["report", str(results), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness report: error: -o ") and len(err.strip().splitlines()) == 1
    if kind == "symlink":
        assert target.is_symlink() and (tmp_path / "elsewhere.html").read_text() == "keep"
    if kind == "fifo":
        assert not target.is_file() and target.exists()
