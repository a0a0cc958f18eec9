"""The README tour's "Read a failure" step is a command a reader can type:
`--mutant NAME` plants one of harness/selftest/mutants.py's bugs for the session. The header names the
engine (item 7) and the generated kernel's path is relative to the project."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_COMMAND = "pytest cases/math-heavy.yaml::forward-float64 --backend sim --mutant flip-sin-rule"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("HARNESS_BACKEND", None)
    return subprocess.run([sys.executable, "-m", *args, "-p", "no:cacheprovider", "--results", "", "--html", ""],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_the_readme_shows_the_command_and_the_failure_it_prints():
    readme = (ROOT / "README.md").read_text()
    assert README_COMMAND in readme
    done = _run(*README_COMMAND.split())
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "FAIL: math-heavy [forward-float64] on sim, engine bundled" in out
    assert "FAIL  fd-forward: J v differs from finite differences" in out
    assert "PASS  dot: forward and reverse agree" in out
    kernel = re.search(r"generated forward kernel: (\S+)", out).group(1)
    assert kernel.startswith(".cache/harness/generated/math_heavy__forward_") and (ROOT / kernel).is_file()
    # the reproduce line carries the planted bug, so following it fails the same way
    assert "reproduce: pytest 'cases/math-heavy.yaml::forward-float64' --backend sim --mutant flip-sin-rule" in out
    for line in ("FAIL: math-heavy [forward-float64] on sim, engine bundled",
                 "reproduce: pytest 'cases/math-heavy.yaml::forward-float64' --backend sim --mutant flip-sin-rule"):
        assert line in readme


def test_an_unknown_mutant_is_one_line_naming_the_known_ones():
    done = _run("pytest", "cases/axpy.yaml", "--backend", "sim", "--mutant", "no-such-bug")
    assert done.returncode == 4
    assert "--mutant: no mutant 'no-such-bug' (known: " in done.stderr and "flip-sin-rule" in done.stderr
