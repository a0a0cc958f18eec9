"""Fuzz campaigns on Dask distributed (harness/fuzz/distributed.py): a LocalCluster of two workers in
which one seed's task kills its worker process: that seed is recorded (worker_died) after its
retries, every other seed's record streams into the log, and --resume reruns only the dead one."""
from __future__ import annotations

import json

import pytest


def test_a_killed_worker_seed_is_recorded_not_lost(tmp_path, monkeypatch, launching_backend):
    if launching_backend.name != "sim":
        pytest.skip("the fuzzer runs on the simulator")
    pytest.importorskip("distributed")
    from harness.fuzz import distributed
    from harness.fuzz.campaign import logged_seeds
    monkeypatch.setenv(distributed.KILL_ENV, "3")
    log = tmp_path / "log.jsonl"
    seeds = [0, 1, 2, 3, 4, 5]
    total = distributed.run_on_dask(seeds, tmp_path / "w", tmp_path / "f", ["bundled"], "sim", log, workers=2,
                                    say=lambda s: None)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(r["seed"] for r in records) == seeds                  # every seed has its line
    dead = [r for r in records if r.get("worker_died")]
    assert [r["seed"] for r in dead] == [3]
    assert dead[0]["findings"][0][2] == "worker-died" and "KilledWorker" in dead[0]["findings"][0][3]
    assert total.kernels == 6 and total.runs == sum(r["runs"] for r in records) and total.runs >= 5
    assert logged_seeds(log) == {0, 1, 2, 4, 5}                         # --resume reruns seed 3
