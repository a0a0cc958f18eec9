"""A backend that cannot start says what went wrong in this situation, not one advice for all:
numba imported before harness, harness imported first but the backend picked after numba loaded,
or the simulator already on in a process that wants real compilation. Each in a fresh process, as a
user's script would meet it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str, **env_changes) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_ENABLE_CUDASIM", "HARNESS_BACKEND", "PYTEST_XDIST_WORKER")}
    env.update(PYTHONPATH=str(ROOT), **env_changes)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def last_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode != 0, done.stdout
    return done.stderr.strip().splitlines()[-1]


def test_numba_imported_before_harness_says_import_harness_first():
    error = last_error(run_python("import numba\nimport harness.backends as b\nb.get_backend()",
                                  HARNESS_BACKEND="sim"))
    assert "because numba was imported before harness" in error
    assert "import harness first" in error


def test_harness_imported_first_but_backend_picked_late_does_not_blame_the_import_order():
    # the README snippet without HARNESS_BACKEND: harness comes first, harness.engine loads numba, and
    # the backend is chosen at the first launch; "import harness before numba" would be wrong advice
    code = ("import harness.backends\nimport harness.engine\nimport numba\n"
            "harness.backends.get_backend('sim')")
    error = last_error(run_python(code))
    assert "harness was imported first" in error and "HARNESS_BACKEND=unset" in error
    assert "before numba" not in error.split("; ")[0]
    assert "set HARNESS_BACKEND=sim in the environment before Python starts" in error


def test_the_advice_for_a_late_pick_works():
    # what the message offers: choosing the simulator before numba loads, from the script itself
    code = ("import harness.backends\nharness.backends.get_backend('sim')\nimport harness.engine\n"
            "from numba.core import config\nprint(config.ENABLE_CUDASIM)")
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "1"


def test_simulator_from_the_environment_names_that_variable():
    error = last_error(run_python("import numba\nimport harness.backends as b\nb.prepare_environment('ptx')",
                                  NUMBA_ENABLE_CUDASIM="1"))
    assert "turned on by NUMBA_ENABLE_CUDASIM=1 in the environment" in error
    assert "cannot share a process" in error


def test_simulator_from_harness_backend_names_that_variable():
    error = last_error(run_python("import harness.backends as b\nimport numba\nb.prepare_environment('ptx')",
                                  HARNESS_BACKEND="sim"))
    assert "HARNESS_BACKEND=sim in the environment when harness was imported" in error


def test_a_second_backend_in_one_process_asks_for_a_separate_process():
    error = last_error(run_python("import harness.backends as b\nb.get_backend('sim')\nb.prepare_environment('ptx')"))
    assert "already runs the 'sim' backend" in error and "separate process" in error


@pytest.mark.parametrize("wanted", ["sim", "ptx"])
def test_no_message_names_a_wrong_cause_for_the_other_situations(wanted):
    from harness.backends.import_order import backend_mismatch
    numba_is_sim = wanted != "sim"
    first = backend_mismatch(wanted, numba_is_sim, numba_imported_first=True, simulator_set_at_import=False,
                             earlier_backend=None)
    late = backend_mismatch(wanted, numba_is_sim, numba_imported_first=False, simulator_set_at_import=False,
                            earlier_backend=None)
    assert f"NUMBA_ENABLE_CUDASIM={int(numba_is_sim)}" in first and f"NUMBA_ENABLE_CUDASIM={int(numba_is_sim)}" in late
    if wanted == "sim":
        assert "imported before harness" in first and "imported before harness" not in late
