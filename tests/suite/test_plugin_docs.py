"""What docs/engines.md says about variants and `engines:` is what the loader does."""
from __future__ import annotations

import shutil
from pathlib import Path

from harness.cases import load_case_file

ROOT = Path(__file__).resolve().parents[2]

CASE = '''\
id: inherit
kernel: kernels/elementwise.py:axpy
launch: {threads: 64, block: 32}
args:
  out: {array: {shape: [64], dtype: float32, init: zeros}, activity: duplicated}
  a:   {scalar: {value: 1.5, dtype: float32}, activity: active}
  x:   {array: {shape: [64], dtype: float32, init: normal}, activity: duplicated}
  y:   {array: {shape: [64], dtype: float32, init: normal}, activity: duplicated}
engines: {warp: {expect: {xfail: {reason: "w"}}}, taichi: {expect: {xfail: {reason: "t"}}}}
variants:
  same:      {launch: {threads: 32}}
  none:      {engines: {}}
  warp-only: {engines: {warp: {expect: pass}}}
'''


def test_variants_inherit_replace_or_drop_the_per_engine_expectations(tmp_path):
    (tmp_path / "kernels").mkdir()
    shutil.copy(ROOT / "kernels" / "elementwise.py", tmp_path / "kernels")
    (tmp_path / "c.yaml").write_text(CASE)
    cases = {c.variant: c for c in load_case_file(tmp_path / "c.yaml", tmp_path)}
    kinds = {v: {e: x.kind for e, x in c.engine_expect.items()} for v, c in cases.items()}
    assert kinds == {None: {"warp": "xfail", "taichi": "xfail"}, "same": {"warp": "xfail", "taichi": "xfail"},
                     "none": {}, "warp-only": {"warp": "pass"}}
    doc = (ROOT / "docs" / "engines.md").read_text()
    for line in ("same:      {launch: {threads: 32}}", "none:      {engines: {}}",
                 "warp-only: {engines: {warp: {expect: pass}}}"):
        assert line in doc


def test_reduced_cases_are_collected_only_when_named(tmp_path):
    """`harness reduce` writes to cases/reduced/; a later `pytest cases` leaves them out."""
    import os
    import subprocess
    import sys
    (tmp_path / "kernels").mkdir()
    shutil.copy(ROOT / "kernels" / "elementwise.py", tmp_path / "kernels")
    (tmp_path / "cases" / "reduced").mkdir(parents=True)
    one = CASE.split("variants:")[0].replace("engines: {warp", "modes: [forward]\ndtypes: [float32]\nengines: {warp")
    (tmp_path / "cases" / "main.yaml").write_text(one)
    (tmp_path / "cases" / "reduced" / "r.yaml").write_text(one.replace("id: inherit", "id: reduced-one"))
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.session.plugin"]\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)

    def collected(*args):
        done = subprocess.run([sys.executable, "-m", "pytest", *args, "--backend", "sim", "--co", "-q",
                               "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
                              cwd=tmp_path, env=env, capture_output=True, text=True)
        return [line for line in done.stdout.splitlines() if "::" in line]

    assert collected("cases") == ["cases/main.yaml::forward-float32"]
    assert collected("cases/reduced") == ["cases/reduced/r.yaml::forward-float32"]
    assert collected("cases/reduced/r.yaml") == ["cases/reduced/r.yaml::forward-float32"]
