"""A campaign log cut short (the campaign killed while writing its last line) still resumes and
summarizes: the broken line is skipped with a warning, its seed runs again, and nothing else in
the log is lost (harness/fuzz/campaign.py, log_records)."""
from __future__ import annotations

import json

from harness.fuzz.campaign import log_records, logged_seeds, summarize_log


def _record(seed: int) -> dict:
    return {"seed": seed, "kernels": 1, "runs": 2, "passes": 2, "refusals": {}, "findings": [],
            "features": {"rule": 1}, "seconds": 0.5, "inconclusive": [], "engine_runs": {"bundled pass": 2}}


def test_a_log_cut_short_resumes_from_its_whole_lines(tmp_path, capsys):
    log = tmp_path / "fuzz.jsonl"
    whole = [json.dumps(_record(s)) for s in (0, 1, 2)]
    log.write_text("\n".join(whole) + "\n" + json.dumps(_record(3))[:25])     # the last write, cut
    assert logged_seeds(log) == {0, 1, 2}                                    # seed 3 runs again
    assert "fuzz.jsonl:4: not a log record (cut short?), skipped" in capsys.readouterr().err
    assert summarize_log(log).kernels == 3


def test_lines_that_are_json_but_no_record_are_skipped_too(tmp_path):
    log = tmp_path / "fuzz.jsonl"
    log.write_text(json.dumps(_record(5)) + "\n[1, 2]\n\"text\"\n\n" + json.dumps(_record(6)) + "\n")
    assert [r["seed"] for r in log_records(log)] == [5, 6]
