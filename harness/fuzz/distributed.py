"""Fuzz campaigns on Dask distributed: one task per seed, results streamed into the log.

`harness fuzz --dask` runs a `LocalCluster` of `-j` worker processes (one thread each: the
simulator and the adapters are not thread-safe); `--scheduler ADDRESS` sends the seeds to an
existing cluster instead (`dask scheduler` + `dask worker ADDRESS --nthreads 1` on each machine,
or a SLURM/PBS cluster from dask-jobqueue, docs/fuzz.md). With `--backend cuda` every task asks
for one `GPU` worker resource, so a worker started with `--resources GPU=1` runs one at a time.

A task is one seed, so a worker that dies (a segfault in Warp or Taichi, the OOM killer) loses
that seed's run only: Dask reschedules it on another worker up to `allowed-failures` times
(`ALLOWED_FAILURES`), then the seed is recorded in the log as `worker_died` (never lost silently).
Each result is written to the log by this process as it arrives, so a stopped campaign keeps what
it ran; `--resume` skips the logged seeds (not those recorded as `worker_died`: they are retried),
and the log of one machine resumes on another.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from .campaign import Tally

ALLOWED_FAILURES = 2        # worker deaths a seed may cause before it is recorded instead of retried
KILL_ENV = "HARNESS_FUZZ_PLANT_KILL"    # tests: seeds (comma-separated) whose task kills its worker
# per worker process: a pool worker keeps its fuzzer (and its compiled kernels) across the seeds it is given
_fuzzers: dict = {}


def seed_task(seed: int, work: str, findings: str, engines: tuple, backend: str) -> dict:
    """Run one seed in this worker process (its fuzzer, and so its backend and engines, kept)."""
    if str(seed) in os.environ.get(KILL_ENV, "").split(","):
        os._exit(9)                               # a planted worker death (tests only)
    key = (work, findings, engines, backend)
    if key not in _fuzzers:
        if engines == ("bundled",) and backend == "sim":
            from .campaign import Fuzzer
            _fuzzers[key] = Fuzzer(Path(work) / f"w{os.getpid()}", Path(findings))
        else:
            from .differential import DifferentialFuzzer
            _fuzzers[key] = DifferentialFuzzer(Path(work) / f"w{os.getpid()}", Path(findings), engines, backend)
    return {"seed": seed, **_fuzzers[key].run_seed(seed).to_json()}


def run_on_dask(seeds, work: Path, findings: Path, engines, backend: str, log: Path | None, *,
                workers: int = 2, scheduler: str | None = None, say=print, client=None) -> Tally:
    """Run `seeds` as Dask tasks; `client`: a connected Client to use (and leave open) instead."""
    import dask
    from distributed import Client, LocalCluster, as_completed
    gpu = {"GPU": 1} if backend == "cuda" else None
    # worker-saturation 1.0: a worker holds only the task it runs, so a death marks that seed alone (with
    # the default 1.1 a queued, innocent seed was counted as suspicious too and could be recorded dead).
    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES - 1,
                          "distributed.scheduler.worker-saturation": 1.0}):
        cluster, own = None, client is None
        if client is not None:
            pass
        elif scheduler:
            client = Client(scheduler)
        else:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, resources=gpu,
                                   dashboard_address=None)
            client = Client(cluster)
        try:
            futures = {client.submit(seed_task, seed, str(work), str(findings), tuple(engines), backend,
                                     key=f"harness-fuzz-seed-{seed}", pure=False, resources=gpu): seed
                       for seed in seeds}
            total = Tally()
            for done, fut in enumerate(as_completed(futures), 1):
                seed = futures[fut]
                try:
                    record = fut.result()
                except Exception as exc:          # KilledWorker after ALLOWED_FAILURES deaths, or the task's error
                    record = {"seed": seed, "worker_died": type(exc).__name__ == "KilledWorker",
                              **Tally(kernels=1, findings=[(seed, "all", "worker-died", f"{type(exc).__name__}: "
                                                            f"{str(exc)[:300]}", "")]).to_json()}
                if log is not None:
                    with open(log, "a") as f:
                        f.write(json.dumps(record) + "\n")
                total.merge(Tally.from_json(record))
                if done % 50 == 0:
                    say(f"  {done} of {len(futures)} seeds, {len(total.findings)} findings")
            return total
        finally:
            if own:
                client.close()
            if cluster is not None:
                cluster.close()
