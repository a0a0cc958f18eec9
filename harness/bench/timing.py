"""Device time of a launch: CUDA events around batches of back-to-back launches (so the host's
launch overhead overlaps the previous kernel), the median of several batches."""
from __future__ import annotations

import statistics
import time


def event_time(launch, repeats: int = 20, batches: int = 5) -> float:
    """Seconds per launch of `launch()`, which enqueues work on the current CUDA stream."""
    import cupy as cp
    launch()
    cp.cuda.runtime.deviceSynchronize()
    times = []
    for _ in range(batches):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(repeats):
            launch()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3 / repeats)
    return statistics.median(times)


def wall_time(call, repeats: int = 20, batches: int = 5) -> float:
    """Seconds per call of a function that blocks until its result is ready (JAX)."""
    call()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(repeats):
            call()
        times.append((time.perf_counter() - t0) / repeats)
    return statistics.median(times)


def host_overhead(call, repeats: int = 2000, clock=time.perf_counter) -> float:
    """Microseconds of host time per call of a cheap launch (`clock`: wall time by default;
    time.process_time counts only this process's CPU time, steadier on a shared host)."""
    for _ in range(20):
        call()
    t0 = clock()
    for _ in range(repeats):
        call()
    return (clock() - t0) / repeats * 1e6
