"""Where a suite's time goes (`pytest cases --harness-profile`): per worker, per run, per kernel.

Workers measure their own start-up (process start to pytest_configure: Python, pytest and plugin
imports), their collection, the backend's start (numba, cupy, the CUDA context: on the first run)
and, per run, every kernel the backend was asked for (backends/compile_log.py). Runs hand their
kernel records over on their test reports, workers their start-up on `workeroutput` (pytest-xdist);
the controller adds them up and prints the breakdown at the end of the session (docs/gpu.md,
"Where the suite's time goes").
"""
from __future__ import annotations

import json
import os
import time
from collections import Counter, defaultdict

PROFILE_KEY = "harness_profile"          # a run's kernel records, on its test report
WORKER_KEY = "harness_worker_profile"    # a worker's start-up, in its workeroutput


def process_age_s() -> float | None:
    """Seconds since this process started (Linux /proc), None elsewhere."""
    try:
        with open("/proc/self/stat") as fh:
            started_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class WorkerClock:
    """One process's start-up phases, in seconds."""

    def __init__(self):
        self.phases: dict[str, float] = {}
        age = process_age_s()
        if age is not None:
            self.phases["startup_s"] = age       # measured at pytest_configure
        self._t0: dict[str, float] = {}

    def start(self, phase: str) -> None:
        self._t0[phase] = time.perf_counter()

    def stop(self, phase: str) -> None:
        if phase in self._t0:
            self.phases[phase] = self.phases.get(phase, 0.0) + time.perf_counter() - self._t0.pop(phase)

    def as_json(self) -> dict:
        lifetime = process_age_s()
        return {**self.phases, **({"lifetime_s": lifetime} if lifetime is not None else {}), "pid": os.getpid()}


def run_record(records, timings: dict, duration: float) -> dict:
    """What one run reports: its kernel requests and its phases."""
    return {"kernels": [[r.key, r.name, round(r.seconds, 4), r.phase, r.served, r.file_key] for r in records],
            "timings": dict(timings), "duration": duration}


class SuiteProfile:
    """The controller's sum of every run's and every worker's records."""

    def __init__(self):
        self.runs: list[tuple[str, str, dict]] = []      # (nodeid, worker, run record)
        self.workers: dict[str, dict] = {}

    def add_run(self, nodeid: str, worker: str, record: dict) -> None:
        self.runs.append((nodeid, worker, record))

    def add_worker(self, worker: str, record: dict) -> None:
        self.workers[worker] = record

    def summary(self) -> dict:
        kernels = [(worker, *k) for _, worker, r in self.runs for k in r["kernels"]]
        served = Counter(k[5] for k in kernels)
        seconds = defaultdict(float)
        for k in kernels:
            seconds[k[5]] += k[3]
        compiled = [k for k in kernels if k[5] == "compiled"]
        by_key = Counter(k[1] for k in compiled)
        first_seen, repeated_s = set(), 0.0
        for k in compiled:
            if k[1] in first_seen:
                repeated_s += k[3]
            first_seen.add(k[1])
        workers_per_key = defaultdict(set)
        for k in kernels:
            workers_per_key[k[1]].add(k[0])
        phase_s = defaultdict(float)
        for k in compiled:
            phase_s[k[4]] += k[3]
        run_phases = defaultdict(float)
        for _, _, r in self.runs:
            for name, value in r["timings"].items():
                run_phases[name] += value
        per_worker_runs = defaultdict(float)
        for _, worker, r in self.runs:
            per_worker_runs[worker] += r["duration"]
        return {
            "runs": len(self.runs),
            "run_seconds": sum(r["duration"] for _, _, r in self.runs),
            "run_phases_s": dict(run_phases),
            "kernel_requests": len(kernels),
            "served": dict(served),
            "served_s": dict(seconds),
            "distinct_kernels": len({k[1] for k in kernels}),
            # generated files whose code another's equals share its kernel (compile_log.shared_code_key)
            "distinct_kernel_files": len({k[6] if len(k) > 6 else k[1] for k in kernels}),
            "distinct_compiled": len(by_key),
            "compiled_again": sum(n - 1 for n in by_key.values()),
            "compiled_again_s": repeated_s,
            "kernels_in_several_workers": sum(1 for ws in workers_per_key.values() if len(ws) > 1),
            "compile_s_by_phase": dict(phase_s),
            "workers": self.workers,
            "runs_s_by_worker": dict(per_worker_runs),
            "slowest_runs": sorted(((r["duration"], nodeid) for nodeid, _, r in self.runs), reverse=True)[:10],
        }

    def lines(self) -> list[str]:
        s = self.summary()
        out = []
        workers = s["workers"]
        if workers:
            def stat(name):
                values = [w[name] for w in workers.values() if name in w]
                return f"{sum(values) / len(values):.2f} / {max(values):.2f} s" if values else "n/a"
            out.append(f"workers: {len(workers)}; mean / max per worker: start-up to configure {stat('startup_s')}, "
                       f"collection {stat('collection_s')}, backend start {stat('backend_start_s')}, "
                       f"lifetime {stat('lifetime_s')}")
        if s["runs_s_by_worker"]:
            busy = s["runs_s_by_worker"].values()
            out.append(f"run seconds per worker: min {min(busy):.1f}, max {max(busy):.1f} "
                       f"(the slowest worker's runs bound the wall time)")
        phases = ", ".join(f"{k.removesuffix('_s')} {v:.1f}" for k, v in sorted(s["run_phases_s"].items(), key=lambda kv: -kv[1]))
        out.append(f"runs: {s['runs']}, {s['run_seconds']:.1f} s in all; phases (s): {phases}")
        served = ", ".join(f"{n} {how} ({s['served_s'].get(how, 0.0):.1f} s)" for how, n in sorted(s["served"].items()))
        out.append(f"kernels: {s['kernel_requests']} requests: {served or 'none'}")
        out.append(f"distinct kernels: {s['distinct_kernels']} ({s['kernels_in_several_workers']} asked for in more "
                   f"than one worker; {s['distinct_kernel_files']} by file, before generated files with the same "
                   f"code shared one); compiled more than once: {s['compiled_again']} compiles, "
                   f"{s['compiled_again_s']:.1f} s")
        by_phase = ", ".join(f"{k} {v:.1f}" for k, v in sorted(s["compile_s_by_phase"].items(), key=lambda kv: -kv[1]))
        out.append(f"compile seconds by who asked: {by_phase or 'none'}")
        out.append("slowest runs: " + ", ".join(f"{nodeid} {d:.1f} s" for d, nodeid in s["slowest_runs"][:5]))
        return out

    def write(self, path: str) -> None:
        with open(path, "w") as fh:
            json.dump({"summary": self.summary(), "runs": self.runs}, fh, indent=1)
