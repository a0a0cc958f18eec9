"""The release matrix (harness/releases): ordering of releases, the fixed/regressed marks, the page,
the bisection, and (where Taichi is installed: tox -e engines-ci) the whole mechanism on two real
releases installed from the package index."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.model import Outcome
from harness.releases.bisect import bisect_releases
from harness.releases.envs import last_of_each_minor, version_key
from harness.releases.matrix import build_matrix, markdown, marks, replace_section
from harness.releases.page import render

ROOT = Path(__file__).resolve().parents[2]


def test_releases_sort_by_number_not_text():
    assert sorted(["1.10.0", "1.9.1", "1.2.0", "1.10.0rc1", "0.15.1"], key=version_key) == \
        ["0.15.1", "1.2.0", "1.9.1", "1.10.0rc1", "1.10.0"]


def test_newest_patch_of_each_minor_in_range():
    versions = ["0.15.1", "1.0.0", "1.0.2", "1.0.1", "1.1.0", "1.2.2", "1.2.0", "1.3.0rc1", "1.10.1", "1.10.0"]
    assert last_of_each_minor(versions, "1.0", "1.10") == ["1.0.2", "1.1.0", "1.2.2", "1.10.1"]
    assert last_of_each_minor(versions, "1.1", "1.2") == ["1.1.0", "1.2.2"]


def test_marks_compare_releases_that_ran_the_case():
    versions = ["1.0", "1.1", "1.2", "1.3", "1.4"]
    # a known bug (XFAIL) gone in 1.2 (XPASS); 1.3 cannot run it; back in 1.4
    fixed, regressed = marks({"1.0": "XFAIL", "1.1": "FAIL", "1.2": "XPASS", "1.3": "UNSUPPORTED",
                              "1.4": "XFAIL"}, versions)
    assert (fixed, regressed) == (["1.2"], ["1.4"])
    assert marks({"1.0": "PASS", "1.1": "UNSUPPORTED", "1.2": "PASS"}, versions) == ([], [])
    assert marks({"1.1": "PASS", "1.4": "ERROR"}, versions) == ([], ["1.4"])


def _outcome(run_id, state, engine="warp", version=""):
    return Outcome(run_id=run_id, case_id=run_id.split("::")[0], source="", variant=None, mode="reverse",
                   dtype=None, backend="sim", state=state, engine=engine, engine_version=version)


def test_matrix_rows_changed_first_and_only_this_engines_runs():
    by_version = {
        "1.10.0": [_outcome("a::r@warp", "PASS"), _outcome("b::r@warp", "XFAIL"), _outcome("b::r", "PASS", "bundled")],
        "1.9.1": [_outcome("a::r@warp", "PASS"), _outcome("b::r@warp", "XPASS")],
    }
    m = build_matrix("warp", by_version)
    assert m.versions == ["1.9.1", "1.10.0"]
    assert [r.run_id for r in m.rows] == ["b::r@warp", "a::r@warp"]
    assert m.rows[0].regressed_in == ["1.10.0"] and m.rows[0].fixed_in == []
    md = markdown(m, "harness releases warp 1.9.1 1.10.0")
    assert "| `b::r@warp` | 1.9.1 XPASS, 1.10.0 XFAIL | - | 1.10.0 |" in md
    assert "1 other runs had the same state" in md
    page = render(m, "harness releases warp 1.9.1 1.10.0")
    assert page.count('<rect class="seg') == 4 and "regressed in" in page


def test_doc_section_is_replaced_between_its_markers():
    text = "intro\n<!-- releases:warp -->\nold\n<!-- /releases:warp -->\nrest\n"
    assert replace_section(text, "warp", "new\n") == "intro\n<!-- releases:warp -->\nnew\n<!-- /releases:warp -->\nrest\n"
    assert replace_section("intro\n", "taichi", "t\n").endswith("<!-- releases:taichi -->\nt\n<!-- /releases:taichi -->\n")


def test_bisect_finds_the_first_changed_release_in_few_probes():
    versions = [f"1.{k}.0" for k in range(20)]
    calls = []

    def state_of(v):
        calls.append(v)
        return "XFAIL" if version_key(v) < version_key("1.13.0") else "XPASS"

    before, after, probed = bisect_releases(versions, state_of)
    assert (before, after) == ("1.12.0", "1.13.0")
    assert len(calls) <= 7 and len(set(calls)) == len(calls)
    assert bisect_releases(versions, lambda v: "PASS")[:2] == (None, None)


def test_two_real_releases_end_to_end(tmp_path):
    """The mechanism on two Taichi releases: each installed into its own folder, the case run in a
    child process that imports that release (the records say which), the page written, and the
    bisection over the same two."""
    pytest.importorskip("taichi")      # the release's own dependencies come from this environment
    case = "cases/taichi-8356-accumulate.yaml"
    page = tmp_path / "releases.html"
    cmd = [sys.executable, "-m", "harness.cli", "releases", "taichi", "1.7.3", "1.7.4", "--cases", case,
           "-o", str(page)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for version in ("1.7.3", "1.7.4"):
        records = [json.loads(line) for line in (ROOT / "reports/releases/taichi" / f"{version}.jsonl").open()]
        runs = [r for r in records if r.get("type") == "run" and r["engine"] == "taichi"]
        assert runs and {r["engine_version"] for r in runs} == {version}
    assert "taichi across 2 releases" in page.read_text()
    run_id = case + "::reverse"
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "bisect", run_id, "--engine", "taichi",
                           "--releases", "1.7.3", "1.7.4"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and f"{run_id}@taichi on taichi" in proc.stdout, proc.stdout + proc.stderr


def test_a_second_table_of_one_engine_goes_between_its_own_markers(tmp_path, monkeypatch, capsys):
    # runs of the corpus of another day (older releases) keep their table; --section names the new one's
    from harness.cli import main
    from harness.releases import cli as releases_cli
    from harness.releases.envs import ReleaseEnv
    from harness.releases.run import results_path
    from harness.results.store import ResultsWriter
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(releases_cli, "ensure", lambda engine, v, project: ReleaseEnv(engine, v, tmp_path))
    for v, state in (("1.5.1", "FAIL"), ("1.19.0", "PASS")):
        with ResultsWriter(results_path(tmp_path, "warp", v)) as writer:
            writer.append(Outcome(run_id="cases/a.yaml::reverse@warp", case_id="a", source="cases/a.yaml",
                                  variant=None, mode="reverse", dtype=None, backend="sim", state=state,
                                  engine="warp", engine_version=v))
    doc = tmp_path / "engines.md"
    doc.write_text("<!-- releases:warp -->\nolder releases\n<!-- /releases:warp -->\n"
                   "<!-- releases:warp-now -->\n<!-- /releases:warp-now -->\n")
    assert main(["releases", "warp", "1.5.1", "1.19.0", "--reuse", "--doc", str(doc), "--section", "warp-now",
                 "--command-line", "harness releases warp 1.5.1 1.19.0 --section warp-now"]) == 0
    text = doc.read_text()
    assert "older releases" in text                                   # the other table is kept
    now = text.split("<!-- releases:warp-now -->")[1]
    assert "1.5.1 FAIL, 1.19.0 PASS | 1.19.0 | - |" in now                 # fixed in 1.19.0
    assert "`harness releases warp 1.5.1 1.19.0 --section warp-now`" in now
