"""Fuzz throughput on Dask at several worker counts: `python -m harness.fuzz.throughput [--workers 2,8,16]
[--seeds 400] [--out throughput.json]`.

Each worker count runs the same seeds (the bundled engine on the simulator: numba, the harness and
dask only, no network, no GPU) on a fresh LocalCluster through harness/fuzz/distributed.py, after
a warm-up of one seed per worker (process start and numba imports are not the fuzzer's throughput),
and prints kernels per second, the speedup over the first count and the wall time. What bounds it:
the seeds' run times are uneven (a few slow kernels finish last: the tail) and the scheduler's
per-task overhead (milliseconds) is small beside a kernel's seconds.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def measure(workers: int, seeds: list[int]) -> dict:
    from distributed import Client, LocalCluster

    from harness.fuzz.distributed import run_on_dask
    with tempfile.TemporaryDirectory(prefix="harness-fuzz-tp-") as tmp, \
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        common = dict(work=Path(tmp) / "w", findings=Path(tmp) / "f", engines=["bundled"], backend="sim", log=None,
                      say=lambda s: None, client=client)
        run_on_dask(list(range(10**6, 10**6 + workers)), **common)     # warm-up: imports, numba, outside the range
        started = time.time()
        tally = run_on_dask(seeds, **common)
        wall = time.time() - started
    return {"workers": workers, "seeds": len(seeds), "runs": tally.runs, "wall_s": round(wall, 1),
            "kernels_per_s": round(len(seeds) / wall, 3), "run_seconds": round(tally.seconds, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", default="2,8,16")
    p.add_argument("--seeds", type=int, default=400)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    from harness.backends import get_backend
    get_backend("sim")
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    rows = []
    for w in [int(x) for x in args.workers.split(",")]:
        row = measure(w, seeds)
        row["speedup"] = round(row["kernels_per_s"] / rows[0]["kernels_per_s"], 2) if rows else 1.0
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
