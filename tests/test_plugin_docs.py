"""What docs/engines.md says about variants and `engines:` (issue 24, item 9) is what the loader does."""
from __future__ import annotations

import shutil
from pathlib import Path

from harness.cases import load_case_file

ROOT = Path(__file__).resolve().parents[1]

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
