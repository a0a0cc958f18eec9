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


def test_a_seed_that_kills_its_worker_in_an_adapter_becomes_that_engines_crash_finding(tmp_path, monkeypatch,
                                                                                        launching_backend):
    """An adapter that kills its process (planted: a segfault in every Taichi launch of the
    generated kernel) takes the worker with it; the seed runs again with each adapter run in a
    process of its own, so the bundled engine's runs keep their verdicts and Taichi's runs are crash
    findings, saved as cases whose xfail runs them in a process of their own (crash: true)."""
    if launching_backend.name != "sim":
        pytest.skip("the fuzzer runs on the simulator")
    pytest.importorskip("distributed")
    pytest.importorskip("taichi")
    from pathlib import Path

    import yaml

    from harness.adapters.isolation import PLANT_ENV
    from harness.fuzz import distributed
    monkeypatch.setenv(PLANT_ENV, "segfault:kernel")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))     # the isolated children's
    log = tmp_path / "log.jsonl"
    total = distributed.run_on_dask([3], tmp_path / "w", tmp_path / "f", ["bundled", "taichi"], "sim", log,
                                    workers=1, say=lambda s: None)
    [record] = [json.loads(line) for line in log.read_text().splitlines()]
    assert not record.get("worker_died") and record["seed"] == 3
    assert total.engine_runs["taichi crash"] >= 1 and total.engine_runs["bundled pass"] >= 1, total.engine_runs
    crashes = [f for f in total.findings if f[2] == "crash"]
    assert crashes and all("EngineProcessDied" in f[3] and "SIGSEGV" in f[3] for f in crashes), crashes
    saved = yaml.safe_load(Path(crashes[0][4]).read_text())
    assert saved["engines"]["taichi"]["expect"]["xfail"]["crash"] is True


def test_a_worker_whose_nanny_gave_up_is_replaced(tmp_path):
    """A nanny that closes (it gave up restarting its worker) leaves the LocalCluster a worker
    short; the keeper starts a new one, and tasks run again."""
    pytest.importorskip("distributed")
    import time

    from distributed import Client, LocalCluster

    from harness.fuzz.distributed import WorkerKeeper
    said = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        keeper = WorkerKeeper(cluster, 1, say=said.append)
        assert keeper.replace_lost() == 0 and not said
        [name] = list(cluster.workers)
        cluster.sync(cluster.workers[name].close)          # the nanny gives up
        assert keeper.replace_lost() == 1 and "lost" in said[0]
        deadline = time.time() + 60
        while not client.scheduler_info()["workers"] and time.time() < deadline:
            time.sleep(0.5)
        assert client.submit(sum, [1, 2], pure=False).result(timeout=60) == 3
        assert keeper.replace_lost() == 0


def _sleep_then(seconds, value):
    import time
    time.sleep(seconds)
    return value


@pytest.mark.parametrize("retries", [2, 0])
def test_a_cancelled_task_is_submitted_again_or_left_out_of_the_log(monkeypatch, retries):
    """A future the client cancels (as when it loses its scheduler) never ran to a verdict: it is
    submitted again while the client is connected, and otherwise no record of it is written (the
    campaign's log would mark it done and --resume skip it), and the run says how many did not run."""
    pytest.importorskip("distributed")
    import threading
    import time

    from distributed import Client, Future, LocalCluster

    from harness.fuzz import distributed
    monkeypatch.setattr(distributed, "CANCELLED_RETRIES", retries)
    records, deaths = {}, {}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        tasks = [("slow", "t-slow", _sleep_then, (3.0, "slow done")), ("fast", "t-fast", _sleep_then, (0.0, "fast done"))]

        def cancel_soon():
            time.sleep(1.0)
            Future("t-slow", client).cancel()
        threading.Thread(target=cancel_soon, daemon=True).start()
        run = lambda: distributed.run_tasks(tasks, records.__setitem__, lambda label, exc: deaths.setdefault(label, exc),
                                            client=client, say=lambda s: None)
        if retries:
            run()
            assert records == {"slow": "slow done", "fast": "fast done"} and not deaths
        else:
            with pytest.raises(distributed.TasksNotRun, match="1 of 2 tasks were not run"):
                run()
            assert records == {"fast": "fast done"} and not deaths
