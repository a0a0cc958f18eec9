"""The end of the test command: refusals grouped by reason with counts, the
per-engine table last, the full per-case table in a file, the reports named."""
from __future__ import annotations

import json

from harness.adapters import table


def _run(engine, state, message="", case="c", mode="reverse"):
    return {"type": "run", "case_id": case, "variant": None, "engine": engine, "engine_version": "1",
            "mode": mode, "dtype": "float32", "state": state, "message": message}


def test_summary_groups_refusals_by_reason_and_ends_with_the_table(tmp_path, capsys):
    runs = [_run("bundled", "PASS")]
    runs += [_run("warp", "UNSUPPORTED", f"warp cannot run this: kernels/k{n}.py:{n}: no forward mode", case=f"c{n}")
             for n in range(30)]
    runs += [_run("taichi", "UNSUPPORTED", f"taichi cannot run this: argument {n} ('a{n}'): no dual", case=f"d{n}")
             for n in range(3)]
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in runs))
    report = tmp_path / "sim.html"
    report.write_text("")
    assert table.main(["--summary", str(results), "--report", str(report), "--report", str(tmp_path / "none.html")]) == 0
    out = capsys.readouterr().out
    assert "  30  warp: no forward mode" in out and "   3  taichi: no dual" in out
    assert len(out.splitlines()) < 20                           # 34 refusals, one line per reason
    assert out.rstrip().splitlines()[-1] == f"report: {report}"      # a report not written is not named
    assert "| warp | 1 | 30 | 0 | 0 | 30 |" in out
    full = (tmp_path / "r.compat.md").read_text()
    assert all(f"- c{n} (warp): warp cannot run this" in full for n in range(30))


def test_plain_output_is_the_whole_markdown(tmp_path, capsys):
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps(_run("warp", "UNSUPPORTED", "warp cannot run this: x")) + "\n")
    table.main([str(results)])
    assert capsys.readouterr().out == table.markdown(table._runs([results]))
    assert not (tmp_path / "r.compat.md").exists()
