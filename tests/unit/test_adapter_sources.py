"""One place for the harness's folders (harness/core/paths.py): what the Warp and Taichi adapters
write is what the report reads, so a report built from their runs shows the translated kernel."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.core import paths
from harness.model import Outcome
from harness.report import write_report
from harness.results.store import ResultsWriter

ROOT = Path(__file__).resolve().parents[2]


def test_every_folder_derives_from_the_generated_sources(tmp_path, monkeypatch):
    from harness.backends.compile_lock import lock_dir
    from harness.cases.load_cache import _folder
    from harness.engine.runtime.cache import cache_dir, write_module
    from harness.adapters.adapter import write_source
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "gen"))
    assert cache_dir() == tmp_path / "gen"
    assert write_source("warp", "k", "x = 1\n").parent == tmp_path / "gen" / "warp"
    assert write_module("k", "x = 1\n").parent == tmp_path / "gen"
    assert _folder() == tmp_path / "cases" and lock_dir() == tmp_path / "locks"
    assert tmp_path / "gen" / "taichi" in paths.generated_source_dirs([])


@pytest.mark.parametrize("engine, marker", [("warp", "@wp.kernel"), ("taichi", "@ti.kernel")])
def test_a_report_of_an_adapter_run_embeds_the_translated_kernel(engine, marker, tmp_path, monkeypatch):
    pytest.importorskip(engine)
    from harness.core.activity import Duplicated
    from harness.backends import get_backend
    from harness.engine.runtime.launch import LaunchConfig
    from harness.adapters import create
    from harness.cases.inputs import load_kernel
    backend = get_backend()
    if not backend.can_launch:
        pytest.skip("launches need the sim or cuda backend")
    project = tmp_path / "project"
    (project / "reports").mkdir(parents=True)
    monkeypatch.chdir(project)                       # the adapters write under the working directory
    monkeypatch.delenv(paths.CACHE_ENV, raising=False)
    A, dA = np.array([3.0]), np.array([1.0])
    result = create(engine, backend).launch(load_kernel("kernels/war.py:square_in_place_first", ROOT),
                                            LaunchConfig.of(1, 1), Duplicated(A, dA), mode="reverse")
    source = Path(result.plan.source_path)
    assert source.parent == project / paths.GENERATED / engine
    results = project / "reports" / "results.jsonl"
    with ResultsWriter(results) as w:
        w.write_meta({"backend": "sim"})
        w.append(Outcome(run_id=f"cases/c.yaml::reverse@{engine}", case_id="c", source="cases/c.yaml",
                         variant=None, mode="reverse", dtype="float64", backend="sim", state="XFAIL",
                         engine=engine, sources={"reverse": str(source)}))
    out = project / "reports" / "index.html"
    write_report([results], out, embed_sources="all")
    html = out.read_text()
    assert "not found in the generated-sources directory" not in html
    assert marker in html and "square_in_place_first" in html
