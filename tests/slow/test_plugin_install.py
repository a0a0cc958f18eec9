"""The harness used from another repository: a wheel built from this checkout,
installed into a fresh virtual environment, serves `pytest cases --backend sim` in a directory of
its own with no conftest.py (the pytest11 entry point), and runs a case through an engine that a
separate package registers in the `gpu_ad_harness.engines` entry-point group.

Slow: it builds the wheel (pip, with its build isolation) and runs one small session.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

KERNEL = '''\
from numba import cuda


@cuda.jit
def axpy(out, a, x, y):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]
'''

CASE = '''\
id: my-axpy
title: "out = a*x + y"
kernel: kernels/mine.py:axpy
launch: {threads: 64, block: 32}
args:
  out: {array: {shape: [64], dtype: float32, init: zeros}, activity: duplicated}
  a:   {scalar: {value: 1.5, dtype: float32}, activity: active}
  x:   {array: {shape: [64], dtype: float32, init: normal}, activity: duplicated}
  y:   {array: {shape: [64], dtype: float32, init: normal}, activity: duplicated}
modes: [forward, reverse]
dtypes: [float32]
'''

# Two engines of another package: one hands the launch to the bundled engine (so its runs pass),
# one refuses everything (so its runs are skips that name it).
ADAPTER = '''\
from harness.core.errors import UnsupportedError
from harness.adapters import create


class Delegating:
    name, version = "delegating", "0.0.1"

    def __init__(self, backend):
        self.backend = backend
        self._inner = create("bundled", backend)

    def launch(self, kernel, config, *args, mode="primal"):
        return self._inner.launch(kernel, config, *args, mode=mode)


class Refusing:
    name, version = "refusing", "0.0.1"

    def __init__(self, backend):
        self.backend = backend

    def launch(self, kernel, config, *args, mode="primal"):
        raise UnsupportedError("this engine differentiates nothing", file="kernels/mine.py", line=4)
'''


def _adapter_wheel(folder: Path) -> Path:
    """A real wheel of a one-module package whose entry points register the two engines."""
    dist = "demo_engines-0.0.1.dist-info"
    files = {
        "demo_engines.py": ADAPTER,
        f"{dist}/METADATA": "Metadata-Version: 2.1\nName: demo-engines\nVersion: 0.0.1\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": "[gpu_ad_harness.engines]\ndelegating = demo_engines:Delegating\n"
                                    "refusing = demo_engines:Refusing\n",
    }
    path = folder / "demo_engines-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
        wheel.writestr(f"{dist}/RECORD", "".join(f"{n},,\n" for n in [*files, f"{dist}/RECORD"]))
    return path


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HARNESS_", "NUMBA_", "PYTEST_")) and k not in ("PYTHONPATH",)}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv with this checkout's wheel and the adapter package; numba and the rest come
    from the running environment (a .pth line), so nothing is downloaded but the build backend."""
    work = tmp_path_factory.mktemp("plugin-install")
    env = _clean_env()
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(work)],
                           capture_output=True, text=True, env=env, cwd=work)
    assert built.returncode == 0, built.stdout + built.stderr
    harness_wheel, = work.glob("gpu_ad_harness-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
    python = work / "venv" / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    installed = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(harness_wheel),
                                str(_adapter_wheel(work))], capture_output=True, text=True, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # only now the running environment's packages: before the install, pip would see this checkout's
    # own (editable) install there as the harness already installed, and skip the wheel
    (Path(purelib) / "running_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "cases").mkdir()
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "mine.py").write_text(KERNEL)
    (tmp_path / "cases" / "mine.yaml").write_text(CASE)
    return tmp_path


def _pytest(python: Path, project: Path, *args: str):
    return subprocess.run([python, "-m", "pytest", "cases", "--backend", "sim", "-p", "no:cacheprovider", "-rs", *args],
                          capture_output=True, text=True, env=_clean_env(), cwd=project)


def test_an_installed_harness_runs_another_projects_cases_and_its_engines(venv, project):
    where = subprocess.run([venv, "-c", "import harness; print(harness.__file__)"],
                           capture_output=True, text=True, cwd=project, env=_clean_env()).stdout
    assert str(venv.parents[1]) in where                      # the wheel's copy, not this checkout
    assert not (project / "conftest.py").exists()
    done = _pytest(venv, project, "--engine", "bundled,delegating,refusing")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "4 passed, 2 skipped" in out                      # bundled and delegating pass, refusing skips
    assert "refusing cannot run this" in out and "differentiates nothing" in out
    session, = (project / "reports" / "sessions").iterdir()   # the reports land in the other project
    records = [json.loads(line) for line in (session / "results.jsonl").read_text().splitlines()]
    runs = {(r["engine"], r["mode"]): r for r in records if r.get("engine")}
    assert runs[("delegating", "reverse")]["state"] == "PASS"
    assert runs[("delegating", "reverse")]["engine_version"] == "0.0.1"
    assert runs[("refusing", "forward")]["state"] == "UNSUPPORTED"
    assert (project / "reports" / "index.html").exists()


def test_the_kernel_root_can_be_set_in_the_ini_file(venv, project):
    """The cases in a subfolder with their own ini file; the kernels one level up, named there."""
    suite = project / "suite"
    suite.mkdir()
    (project / "cases").rename(suite / "cases")
    (suite / "pytest.ini").write_text("[pytest]\nharness_root = ..\n")
    done = _pytest(venv, suite)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    assert (project / "reports" / "index.html").exists()      # reports/ beside kernels/, at the root
    # an unknown engine names the entry-point group where others come from
    done = _pytest(venv, suite, "--engine", "nosuch")
    assert done.returncode != 0 and "gpu_ad_harness.engines" in done.stderr
