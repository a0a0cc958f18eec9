"""Campaigns on Dask distributed: fuzz seeds (one task each, here) and mutants (harness/selftest/campaign.py)
through one runner, `run_tasks`, with results streamed into the caller's log.

`harness fuzz --dask` runs a `LocalCluster` of `-j` worker processes (one thread each: the
simulator and the adapters are not thread-safe); `--scheduler ADDRESS` sends the seeds to an
existing cluster instead (`dask scheduler` + `dask worker ADDRESS --nthreads 1` on each machine,
or a SLURM/PBS cluster from dask-jobqueue, docs/fuzz.md). With `--backend cuda` every task asks
for one `GPU` worker resource, so a worker started with `--resources GPU=1` runs one at a time.

A task is one seed, so a worker that dies (a segfault in Warp or Taichi, the OOM killer) loses
that seed's run only. A fuzz seed whose task killed its worker runs once more, with every adapter
run in a child process of its own (harness/adapters/isolation.py): the engine whose process died
then has a crash finding of that run (saved as a case, like any finding), and the seed's other runs
keep their verdicts. A seed that kills its worker again (the bundled engine on the simulator, the
OOM killer), or a mutant's task after `ALLOWED_FAILURES` deaths, is recorded in the log as
`worker_died` (never lost silently).
Each result is written to the log by this process as it arrives, so a stopped campaign keeps what
it ran; `--resume` skips the logged seeds (not those recorded as `worker_died`: they are retried),
and the log of one machine resumes on another.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.fuzz.campaign import Tally

ALLOWED_FAILURES = 2        # worker deaths a mutant's task may cause before it is recorded instead of retried
KILL_ENV = "HARNESS_FUZZ_PLANT_KILL"    # tests: seeds (comma-separated) whose task kills its worker
# per worker process: a pool worker keeps its fuzzer (and its compiled kernels) across the seeds it is given
_fuzzers: dict = {}


def seed_task(seed: int, work: str, findings: str, engines: tuple, backend: str, isolated: bool = False) -> dict:
    """Run one seed in this worker process (its fuzzer, and so its backend and engines, kept);
    `isolated`: each adapter run in a child process (the rerun of a seed that killed a worker)."""
    if str(seed) in os.environ.get(KILL_ENV, "").split(","):
        os._exit(9)                               # a planted worker death (tests only)
    key = (work, findings, engines, backend)
    if key not in _fuzzers:
        if engines == ("bundled",) and backend == "sim":
            from harness.fuzz.campaign import Fuzzer
            _fuzzers[key] = Fuzzer(Path(work) / f"w{os.getpid()}", Path(findings))
        else:
            from harness.fuzz.differential import DifferentialFuzzer
            _fuzzers[key] = DifferentialFuzzer(Path(work) / f"w{os.getpid()}", Path(findings), engines, backend)
    with _adapter_runs_isolated(isolated):
        return {"seed": seed, **_fuzzers[key].run_seed(seed).to_json()}


@contextmanager
def _adapter_runs_isolated(on: bool):
    from harness.adapters.isolation import ISOLATE_ENV
    before = os.environ.get(ISOLATE_ENV)
    if on:
        os.environ[ISOLATE_ENV] = "1"
    try:
        yield
    finally:
        if on:
            if before is None:
                os.environ.pop(ISOLATE_ENV, None)
            else:
                os.environ[ISOLATE_ENV] = before


@dataclass
class Retry:
    """What `on_death` may return instead of a record: run this task in place of the dead one."""
    key: str
    function: Callable
    args: tuple


class WorkerKeeper:
    """Keeps a LocalCluster at its number of workers. A worker that a task killed is restarted by its
    nanny; on a loaded machine the new process can miss the nanny's deadline, and the nanny then
    gives up and closes (seen: a two-worker campaign left with none, its seeds waiting forever).
    Every `period` seconds, each closed nanny is replaced by a new worker."""

    def __init__(self, cluster, workers: int, say=print, period: float = 10.0):
        import threading
        self.cluster, self.workers, self.say, self.period = cluster, workers, say, period
        self._replaced: set = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="harness-worker-keeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self):
        while not self._stop.wait(self.period):
            self.replace_lost()

    def replace_lost(self) -> int:
        """Start a new worker for every nanny that gave up; returns how many."""
        lost = [name for name, nanny in list(self.cluster.workers.items())
                if getattr(nanny.status, "name", "") in ("closed", "failed") and name not in self._replaced]
        if lost:
            # the closed entries stay in the cluster's spec (a new worker must not reuse their names,
            # or the cluster takes the closed one for it): scale past them
            self._replaced.update(lost)
            self.say(f"  {len(lost)} worker(s) lost for good (their nannies gave up restarting them): starting new ones")
            self.cluster.scale(len(self.cluster.worker_spec) + len(lost))
        return len(lost)


def run_tasks(tasks, on_record, on_death, *, workers: int = 2, scheduler: str | None = None, gpu: bool = False,
              client=None, say=print, what: str = "tasks", progress_every: int = 50,
              allowed_failures: int = ALLOWED_FAILURES) -> None:
    """Run `tasks`, (label, key, function, args) each, as Dask tasks, one at a time per worker.
    Each result goes to `on_record(label, result)` as it arrives (in this process: the caller streams
    it into its log); a task whose worker died `allowed_failures` times, or that raised, goes to
    `on_death(label, exc)`, which returns its record (then `on_record(label, record)`: never lost) or
    a `Retry`, a task run in its place. `client`: a connected Client to use (and leave open);
    `scheduler`: an existing cluster's address; else a LocalCluster of `workers` single-threaded
    processes. `gpu`: every task asks for one GPU worker resource."""
    import dask
    from distributed import Client, LocalCluster, as_completed
    resources = {"GPU": 1} if gpu else None
    # worker-saturation 1.0: a worker holds only the task it runs, so a death marks that task alone (with
    # the default 1.1 a queued, innocent task was counted as suspicious too and could be recorded dead).
    # Comm timeouts of 120 s (default 30 s): on a machine whose cores the campaign shares (load 14 on
    # 2 cores), the client's connection to a local scheduler timed out and every pending task was cancelled.
    with dask.config.set({"distributed.scheduler.allowed-failures": allowed_failures - 1,
                          "distributed.scheduler.worker-saturation": 1.0,
                          "distributed.comm.timeouts.connect": "120s", "distributed.comm.timeouts.tcp": "120s"}):
        cluster, own = None, client is None
        if client is not None:
            pass
        elif scheduler:
            client = Client(scheduler)
        else:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, resources=resources,
                                   dashboard_address=None)
            client = Client(cluster)
        keeper = WorkerKeeper(cluster, workers, say) if cluster is not None else None
        try:
            if keeper is not None:
                keeper.start()
            futures = {client.submit(fn, *args, key=key, pure=False, resources=resources): label
                       for label, key, fn, args in tasks}
            spec = {label: (key, fn, args) for label, key, fn, args in tasks}
            pending = as_completed(futures)
            done, cancelled, not_run = 0, Counter(), []
            for fut in pending:
                label = futures.pop(fut)
                try:
                    record = fut.result()
                except Exception as exc:          # KilledWorker after its allowed deaths, or the task's error
                    if was_cancelled(exc):
                        # the task never reached a verdict (the client lost its scheduler): submitted
                        # again while the client is connected, else left out of the log for --resume
                        fut.release()
                        cancelled[label] += 1
                        if cancelled[label] <= CANCELLED_RETRIES and client.status == "running":
                            key, fn, args = spec[label]
                            again = client.submit(fn, *args, key=f"{key}-again{cancelled[label]}", pure=False,
                                                  resources=resources)
                            futures[again] = label
                            pending.add(again)
                        else:
                            not_run.append((label, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"))
                        continue
                    record = on_death(label, exc)
                # Released at once: a result left on its worker is recomputed when that worker dies
                # (Dask keeps what a client still refers to), so every seed a dead worker had run
                # ran again.
                fut.release()
                if isinstance(record, Retry):
                    retry = client.submit(record.function, *record.args, key=record.key, pure=False,
                                          resources=resources)
                    futures[retry] = label
                    pending.add(retry)
                    continue
                on_record(label, record)
                done += 1
                if done % progress_every == 0:
                    say(f"  {done} of {len(tasks)} {what}")
            if not_run:
                raise TasksNotRun(f"{len(not_run)} of {len(tasks)} {what} were not run ({not_run[0][1]}); no record "
                                  f"of them was written, so a run with --resume runs them")
        finally:
            if keeper is not None:
                keeper.stop()
            if own:
                client.close()
            if cluster is not None:
                cluster.close()


def worker_died(exc: BaseException) -> bool:
    return type(exc).__name__ == "KilledWorker"


def was_cancelled(exc: BaseException) -> bool:
    """A future the client gave up on (its scheduler connection lost, or cancelled), not a task that ran."""
    import asyncio
    import concurrent.futures
    return isinstance(exc, (concurrent.futures.CancelledError, asyncio.CancelledError))


CANCELLED_RETRIES = 2       # resubmissions of a cancelled task while the client is still connected


class TasksNotRun(RuntimeError):
    """Tasks that reached no verdict (cancelled); the caller's log has no line for them."""


def run_on_dask(seeds, work: Path, findings: Path, engines, backend: str, log: Path | None, *,
                workers: int = 2, scheduler: str | None = None, say=print, client=None,
                engines_of: dict | None = None) -> Tally:
    """Run `seeds` as Dask tasks; `client`: a connected Client to use (and leave open) instead;
    `engines_of`: seed -> engines for the seeds that run through other engines than `engines`.
    A seed whose task killed its worker reruns once with its adapter runs isolated (module doc)."""
    total = Tally()
    engines_of = engines_of or {}
    args_of = {seed: (seed, str(work), str(findings), tuple(engines_of.get(seed, engines)), backend)
               for seed in seeds}
    rerun: set = set()

    def death(seed, exc):
        if worker_died(exc) and seed not in rerun:
            rerun.add(seed)
            isolated = _has_adapter(args_of[seed][3])
            say(f"  seed {seed} killed its worker: running it again"
                + (" with each adapter run in a process of its own" if isolated else ""))
            return Retry(f"harness-fuzz-seed-{seed}-again", seed_task, args_of[seed] + (isolated,))
        return {"seed": seed, "worker_died": worker_died(exc),
                **Tally(kernels=1, findings=[(seed, "all", "worker-died", f"{type(exc).__name__}: "
                                              f"{str(exc)[:300]}", "")]).to_json()}

    def record(seed, rec):
        if log is not None:
            with open(log, "a") as f:
                f.write(json.dumps(rec) + "\n")
        total.merge(Tally.from_json(rec))

    tasks = [(seed, f"harness-fuzz-seed-{seed}", seed_task, args_of[seed]) for seed in seeds]
    run_tasks(tasks, record, death, workers=workers, scheduler=scheduler, gpu=backend == "cuda", client=client,
              say=say, what="seeds", allowed_failures=1)
    return total


def _has_adapter(engines) -> bool:
    from harness.fuzz.differential import ADAPTERS
    return bool(set(engines) & set(ADAPTERS))
