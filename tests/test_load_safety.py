"""Loading a case file is safe and bounded (issue 11, items 1, 6, 7, 8): no case runs code, no case
exhausts the machine, every bad input is a CaseError naming file, line and key, nothing invalid is
accepted. Each test builds a tiny project in tmp_path; numba is not imported.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cases import CaseError, load_case_file
from harness.model import ArgSpec

KERNELS = '''\
def add(out, x, y):
    out[0] = x[0] + y[0]


def convert_to(T, a):
    return T(a)
'''

# 1 id, 2 kernel, 3 launch, 4 args, 5 out, 6 x, 7 y
BASE = """\
id: add-case
kernel: kernels/k.py:add
launch: {threads: 8}
args:
  out: {array: {shape: [8], dtype: float32}, activity: duplicated}
  x: {array: {shape: [8], dtype: float32, init: ones}}
  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}
"""

# 1 id, 2 kernel, 3 launch, 4 args, 5 out, 6 T, 7 a
BROADCAST = """\
id: convert
kernel: kernels/k.py:convert_to
launch: {style: broadcast}
args:
  out: {array: {shape: [4], dtype: float32}, activity: duplicated}
  T: {type: TYPE}
  a: {array: {shape: [4], dtype: float32, init: normal}, activity: duplicated}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNELS)
    (tmp_path / "cases").mkdir()
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.plugin"]\n')
    return tmp_path


def write(project: Path, text: str | bytes, name: str = "c.yaml") -> Path:
    path = project / "cases" / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def refused(project: Path, text: str | bytes, name: str = "c.yaml") -> CaseError:
    with pytest.raises(CaseError) as info:
        load_case_file(write(project, text, name), project)
    return info.value


def edit(old: str, new: str, base: str = BASE) -> str:
    assert base.count(old) == 1, old
    return base.replace(old, new)


# ----------------------------------------------------------------------------- 1. type: allow-list

@pytest.mark.parametrize("name", ["os._exit", "time.sleep", "os.system", "builtins.eval",
                                  "numpy.load", "numpy.testing", "this.s", "eval", "type"])
def test_type_outside_the_allow_list_is_refused_at_load(project, name):
    error = refused(project, edit("TYPE", name, BROADCAST))
    assert (error.file, error.line, error.key) == ("cases/c.yaml", 6, "args.T.type")
    assert f"'{name}' is not an allowed type" in str(error)
    assert "this" not in sys.modules or name != "this.s"


@pytest.mark.parametrize("name, expected", [("float", float), ("int", int), ("bool", bool),
                                            ("numpy.float64", "float64"), ("numpy.int32", "int32")])
def test_allowed_types_load_and_resolve_to_the_type(project, name, expected):
    import numpy as np
    from harness.inputs import build_args
    case = load_case_file(write(project, edit("TYPE", name, BROADCAST)), project)[0]
    value = build_args(case.args, 0, project)[1].value
    assert value is (expected if isinstance(expected, type) else getattr(np, expected))


def test_resolving_a_type_never_imports_a_module(project):
    """Defence in depth: a record that bypassed the loader still cannot reach a module."""
    from harness.inputs import build_args
    before = set(sys.modules)
    for name in ("this.s", "os._exit", "antigravity.geohash"):
        with pytest.raises(CaseError, match="not an allowed type"):
            build_args((ArgSpec(name="T", kind="type", value=name),), 0, project)
    assert set(sys.modules) - before == set()


def test_a_case_with_type_os_exit_does_not_end_pytest(project):
    """Before: `T: {type: os._exit}` ended the pytest process (exit 7, no results)."""
    write(project, edit("TYPE", "os._exit", BROADCAST))
    results = project / "results.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "cases", "-q", "-p", "no:cacheprovider", "--backend", "sim",
         "--rootdir", str(project), "--results", str(results), "--html", ""],
        cwd=project, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cases/c.yaml:6: key 'args.T.type': 'os._exit' is not an allowed type" in proc.stdout
    assert "ERROR" in results.read_text()
