"""The results store: JSON-lines round trip, crash tolerance, metadata, atomic writes."""
from __future__ import annotations

import json
import math
import os
import stat

import pytest

from harness.model import ErrorRecord, JobRecord, OracleVerdict, Outcome, WorstEntry
from harness.results.store import ResultsWriter, atomic_write_text, collect_metadata, read_results


def make_outcome(n: int = 0, state: str = "PASS", **extra) -> Outcome:
    fields = dict(
        run_id=f"cases/c{n}.yaml::reverse-float32", case_id=f"c{n}", source=f"cases/c{n}.yaml",
        variant=None, mode="reverse", dtype="float32", backend="sim", state=state,
        message="" if state == "PASS" else "gradient mismatch", title=f"case {n}",
        tags=["broadcast"], links=["https://example.org/issue/1"], kernel="kernels/k.py:f",
        args=[{"name": "x", "kind": "array", "activity": "duplicated", "shape": [4], "dtype": "float32"}],
        oracles=[OracleVerdict("fd-reverse", "fail" if state == "FAIL" else "pass", "m", {"rtol": 2e-3},
                               [WorstEntry("x[1]", 0.0, 2.0, 2.0, 1.0)] if state == "FAIL" else [])],
        jobs=[JobRecord(1, "df", "primal", "cuda"), JobRecord(2, "f", "reverse", "cuda", parent=1, kernel=False)],
        ptx={"df": {"atomics": 0}}, sources={"reverse": "build/gen/f_rev.py"},
        timings={"compile": 0.25, "launch": 1e-4}, repro="pytest cases/c.yaml -k reverse",
        started=1.0, duration=0.5)
    fields.update(extra)
    return Outcome(**fields)


def test_append_and_read_round_trip(tmp_path):
    path = tmp_path / "results.jsonl"
    originals = [make_outcome(0), make_outcome(1, "FAIL"),
                 make_outcome(2, "ERROR", error=ErrorRecord("KernelError", "not isbits", "x", "tb"))]
    with ResultsWriter(path) as writer:
        writer.write_meta({"backend": "sim", "seed": 3})
        for outcome in originals:
            writer.append(outcome)
        writer.append(make_outcome(3).to_json())          # plain dicts are accepted too
    meta, outcomes = read_results(path)
    assert meta["backend"] == "sim" and meta["seed"] == 3 and meta["schema"] == 1
    assert outcomes[:3] == originals
    assert outcomes[3] == make_outcome(3)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "meta"
    assert all(json.loads(line)["type"] == "run" for line in lines[1:])


def test_records_are_on_disk_before_close(tmp_path):
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path)
    writer.append(make_outcome(0))
    # A second reader sees the record while the writer is still open: flushed per record.
    assert len(read_results(path)[1]) == 1
    writer.close()
    with pytest.raises(ValueError):
        writer.append(make_outcome(1))


def test_truncated_last_line_is_tolerated(tmp_path):
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write_meta({"backend": "sim"})
        writer.append(make_outcome(0))
        writer.append(make_outcome(1))
    whole = json.dumps({"type": "run", **make_outcome(2).to_json()})
    with open(path, "a") as fh:
        fh.write(whole[: len(whole) // 2])                 # killed mid-write
    meta, outcomes = read_results(path)
    assert [o.case_id for o in outcomes] == ["c0", "c1"]
    assert len(meta["warnings"]) == 1 and "torn last line" in meta["warnings"][0]

    # The next session starts on a fresh line, so its records are not glued to the torn one.
    with ResultsWriter(path) as writer:
        writer.append(make_outcome(3))
    meta, outcomes = read_results(path)
    assert [o.case_id for o in outcomes] == ["c0", "c1", "c3"]
    assert len(meta["warnings"]) == 1


def test_invalid_record_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"type": "run", "run_id": "x"}\n[1, 2]\n{"type": "future-kind", "a": 1}\n\n')
    meta, outcomes = read_results(path)
    assert outcomes == []
    assert len(meta["warnings"]) == 2      # missing required fields; not an object


def test_several_sessions_in_one_file(tmp_path):
    path = tmp_path / "results.jsonl"
    for seed in (1, 2):
        with ResultsWriter(path) as writer:
            writer.write_meta({"backend": "sim", "seed": seed})
            writer.append(make_outcome(seed))
    meta, outcomes = read_results(path)
    assert meta["seed"] == 2 and meta["sessions"] == 2
    assert len(outcomes) == 2


def test_nan_metrics_round_trip(tmp_path):
    path = tmp_path / "results.jsonl"
    outcome = make_outcome(0, "ZERO", oracles=[OracleVerdict("zero", "fail", "", {"norm": float("nan")},
                                                             [WorstEntry("x[0]", float("nan"), 1.0, 1.0, 1.0)])])
    with ResultsWriter(path) as writer:
        writer.append(outcome)
    (_, [back]) = read_results(path)
    assert math.isnan(back.oracles[0].metrics["norm"]) and math.isnan(back.oracles[0].worst[0].ad)


def test_collect_metadata_never_fails(monkeypatch):
    meta = collect_metadata("sim", seed=7)
    assert meta["backend"] == "sim" and meta["seed"] == 7
    assert meta["versions"]["python"] and "numpy" in meta["versions"] and "numba-cuda" in meta["versions"]
    assert isinstance(meta["gpus"], list) and meta["started"]
    json.dumps(meta)                                       # plain data only

    monkeypatch.setenv("PATH", "/nonexistent")            # no git, no nvidia-smi
    bare = collect_metadata("ptx")
    assert bare["git_revision"] is None and bare["gpus"] == []


def test_atomic_write_text(tmp_path):
    target = tmp_path / "out" / "index.html"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["index.html"]
