"""a results file is untrusted input for the report.

Every malformed record is skipped with a warning (never a traceback), warnings never carry raw
control characters to the terminal, and generated sources are read only from the generated-sources
directory.
"""
from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.model import Outcome
from harness.results.store import read_results


def good_record(**changes) -> dict:
    record = {"type": "run", "run_id": "cases/a.yaml::reverse", "case_id": "a", "source": "cases/a.yaml",
              "variant": None, "mode": "reverse", "dtype": None, "backend": "sim", "state": "FAIL",
              "message": "m", "title": "t", "tags": ["x"], "args": [], "oracles": [], "ptx": {},
              "sources": {}, "timings": {"run_s": 0.1}, "error": None, "jobs": []}
    record.update(changes)
    return record


def deep(levels: int):
    value = 0
    for _ in range(levels):
        value = [value]
    return value


MALFORMED = {
    "state-int": {"state": 3},
    "state-unknown": {"state": "MAYBE"},
    "tags-str": {"tags": "abc"},
    "tags-ints": {"tags": [1, 2]},
    "title-list": {"title": ["x"]},
    "ptx-list": {"ptx": [1, 2]},
    "ptx-facts-str": {"ptx": {"k": "many"}},
    "args-dict": {"args": {"a": 1}},
    "args-items-int": {"args": [3]},
    "timings-str": {"timings": "slow"},
    "timings-values-str": {"timings": {"run_s": "slow"}},
    "oracles-bad": {"oracles": [{"verdict": 1}]},
    "error-str": {"error": "boom"},
    "jobs-bad": {"jobs": [{"id": "x"}]},
    "sources-list": {"sources": ["/etc/passwd"]},
    "case_id-null": {"case_id": None},
    "nested-metrics": {"oracles": [{"name": "fd", "verdict": "fail", "metrics": {"x": deep(200)}}]},
    "duration-str": {"duration": "long"},
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_record_is_skipped_with_a_warning(tmp_path, name):
    path = tmp_path / "r.jsonl"
    lines = [good_record(), good_record(run_id="cases/b.yaml::reverse", **MALFORMED[name])]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    meta, outcomes = read_results(path)
    assert [o.run_id for o in outcomes] == ["cases/a.yaml::reverse"]
    assert len(meta["warnings"]) == 1 and ":2:" in meta["warnings"][0]


def test_lone_surrogate_is_skipped_and_pairs_are_kept(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good_record(title="ok \U0001F600")) + "\n"
                    + json.dumps(good_record(run_id="cases/b.yaml::r")).replace('"t"', '"\\udc80"') + "\n")
    meta, outcomes = read_results(path)
    assert [o.title for o in outcomes] == ["ok \U0001F600"] and len(meta["warnings"]) == 1
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0


def test_deeply_nested_json_line_is_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good_record()) + "\n" + "[" * 100000 + "]" * 100000 + "\n")
    meta, outcomes = read_results(path)
    assert len(outcomes) == 1 and len(meta["warnings"]) == 1


def test_report_cli_survives_every_malformed_record(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    records = [good_record()] + [good_record(run_id=f"cases/{n}.yaml::reverse", **c) for n, c in MALFORMED.items()]
    text = "".join(json.dumps(r) + "\n" for r in records) + "[" * 5000 + "\n"
    path.write_text(text)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr()
    assert "1 runs" in out.out or "1 run" in out.out
    assert out.err.count("warning:") == len(MALFORMED) + 1


def test_control_characters_never_reach_the_terminal(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    evil = "\x1b]0;pwned\x07\x1b[2J\r"
    path.write_text(json.dumps(good_record()) + "\n" + json.dumps(good_record(state=evil, title=evil)) + "\n"
                    + evil + "{not json\n")
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr()
    for stream in (out.out, out.err):
        assert not any(ord(c) < 32 and c != "\n" or 0x7f <= ord(c) < 0xa0 for c in stream), repr(stream)


def test_report_reads_sources_only_from_the_generated_directory(tmp_path, monkeypatch):
    secret = tmp_path / "secret.py"
    secret.write_text("SECRET_TOKEN = 'do-not-embed'\n")
    generated = tmp_path / "gen"
    generated.mkdir()
    (generated / "k_rev_0123.py").write_text("def k_rev():\n    GENERATED_MARKER = 1\n")
    link = generated / "link_rev_0123.py"
    link.symlink_to(secret)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(generated))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "r.jsonl"
    records = [good_record(run_id="cases/a.yaml::r1", sources={"reverse": str(secret)}),
               good_record(run_id="cases/a.yaml::r2", sources={"reverse": "secret.py"}),
               good_record(run_id="cases/a.yaml::r3", sources={"reverse": "gen/../secret.py"}),
               good_record(run_id="cases/a.yaml::r4", sources={"reverse": str(link)}),
               good_record(run_id="cases/a.yaml::r5", sources={"reverse": str(generated / "k_rev_0123.py")})]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["report", str(path), "-o", str(tmp_path / "r.html"), "--embed-sources", "all"]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "do-not-embed" not in html
    assert "GENERATED_MARKER" in html


def test_valid_records_still_round_trip(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good_record()) + "\n")
    meta, outcomes = read_results(path)
    assert isinstance(outcomes[0], Outcome) and "warnings" not in meta
