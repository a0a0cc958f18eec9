"""GPU benchmarks: generated derivative kernels against hand-written kernels with the same
semantics and against the copy bandwidth, all measured in one run on one device.

    python benchmarks/bench_gpu.py --out bench.json          # needs a GPU, cupy and numba-cuda

Kernel times come from CUDA events around repeated launches of the compiled kernels (median of
the repeats); bandwidth uses the bytes each kernel must move (the byte model of DESIGN section 9).
Host launch overhead is timed separately, through the engine's public `launch`.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=26)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out", default="reports/bench.json")
    args = ap.parse_args()

    from harness.backends import get_backend
    backend = get_backend("cuda")
    import cupy as cp
    import numpy as np
    from numba import cuda

    from harness.activity import Active, Const, Duplicated
    from harness.engine.launch import Engine, LaunchConfig
    from harness.inputs import load_function

    engine = Engine(backend)
    axpy = load_function("kernels/elementwise.py:axpy", ROOT)
    scale = load_function("kernels/elementwise.py:scale", ROOT)
    n = 1 << args.log2n
    f32 = np.float32
    config = LaunchConfig.threads(n, 256)
    rng = cp.random.default_rng(0)
    x, y = rng.standard_normal(n, dtype=f32), rng.standard_normal(n, dtype=f32)
    out = cp.zeros(n, f32)
    dx, dy, dout = cp.zeros(n, f32), cp.zeros(n, f32), rng.standard_normal(n, dtype=f32)
    a = f32(1.5)

    def timed(fn) -> float:
        """Seconds per launch: CUDA events around a batch of back-to-back launches (so the host's
        launch overhead overlaps the previous kernel), median of five batches."""
        fn()
        cp.cuda.runtime.deviceSynchronize()
        times = []
        for _ in range(5):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(args.repeats):
                fn()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3 / args.repeats)
        return statistics.median(times)

    grid, block = config.grid, config.block

    # ---- copy bandwidth: the ceiling every memory-bound kernel is compared with (cupy's copy:
    # its launch costs a few microseconds, so the measurement is the memory system's, not numba's
    # dispatcher's, whose ~90 us per launch would dominate a 0.13 ms copy)
    t_copy = timed(lambda: cp.copyto(out, x))
    copy_bw = 2 * 4 * n / t_copy

    # ---- hand-written kernels with the generated kernels' exact semantics
    @cuda.jit
    def axpy_fwd_hand(out, dout, a, x, dx, y, dy):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = a * x[i] + y[i]
            dout[i] = a * dx[i] + dy[i]

    @cuda.jit
    def axpy_rev_hand(out, dout, a, x, dx, y, dy):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = a * x[i] + y[i]
            g = dout[i]
            dout[i] = 0
            dx[i] += a * g
            dy[i] += g

    @cuda.jit
    def axpy_rev_hand_loads_first(out, dout, a, x, dx, y, dy):
        """The same semantics with every load issued before any store (what the engine emits)."""
        i = cuda.grid(1)
        if i < out.shape[0]:
            xv, yv, g, gx, gy = x[i], y[i], dout[i], dx[i], dy[i]
            out[i] = a * xv + yv
            dout[i] = 0
            dx[i] = gx + a * g
            dy[i] = gy + g

    @cuda.jit
    def scale_rev_atomic_per_thread(out, dout, alpha, x, dx, acc):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = alpha * x[i]
            g = dout[i]
            dout[i] = 0
            dx[i] += alpha * g
            cuda.atomic.add(acc, 0, float(g * x[i]))

    def generated(mode, args_):
        plan, infos = engine.prepare(axpy, config, args_, mode)
        kargs, _ = engine._kernel_args(infos, mode, plan)
        return plan, kargs

    fwd_args = (Duplicated(out, dout), Const(a), Duplicated(x, dx), Duplicated(y, dy))
    plan_f, kargs_f = generated("forward", fwd_args)
    kargs_f = [v.item() if isinstance(v, np.generic) else v for v in kargs_f]
    t_fwd_gen = timed(lambda: plan_f.compiled[grid, block](*kargs_f))
    t_fwd_hand = timed(lambda: axpy_fwd_hand[grid, block](out, dout, a, x, dx, y, dy))
    plan_r, kargs_r = generated("reverse", fwd_args)
    kargs_r = [v.item() if isinstance(v, np.generic) else v for v in kargs_r]
    t_rev_gen = timed(lambda: plan_r.compiled[grid, block](*kargs_r))
    t_rev_hand = timed(lambda: axpy_rev_hand[grid, block](out, dout, a, x, dx, y, dy))
    t_rev_hand_best = timed(lambda: axpy_rev_hand_loads_first[grid, block](out, dout, a, x, dx, y, dy))
    primal_plan, pinfos = engine.prepare(axpy, config, (out, a, x, y), "primal")
    pargs = [v.item() if isinstance(v, np.generic) else v for v in engine._kernel_args(pinfos, "primal", primal_plan)[0]]
    t_primal = timed(lambda: primal_plan.compiled[grid, block](*pargs))

    # bytes each kernel must move (float32): primal reads x, y, writes out
    b_primal = 3 * 4 * n
    b_fwd = 6 * 4 * n                       # x, dx, y, dy read; out, dout written
    b_rev = 9 * 4 * n                       # x, y, dout read; out, dout written; dx, dy read+written

    # ---- Active scalar: hierarchical reduction (generated) vs one atomic per thread (hand-written)
    act_args = (Duplicated(out, dout), Active(a), Duplicated(x, dx))
    plan_a, infos_a = engine.prepare(scale, config, act_args, "reverse")
    kargs_a, acc = engine._kernel_args(infos_a, "reverse", plan_a)
    kargs_a = [v.item() if isinstance(v, np.generic) else v for v in kargs_a]
    t_active_gen = timed(lambda: plan_a.compiled[grid, block](*kargs_a))
    acc2 = cp.zeros(1, np.float64)
    t_active_atomic = timed(lambda: scale_rev_atomic_per_thread[grid, block](out, dout, a, x, dx, acc2))

    # ---- host launch overhead of a cached kernel through the engine's public API
    small = cp.zeros(256, f32), cp.ones(256, f32), cp.ones(256, f32)
    small_cfg = LaunchConfig.threads(256, 256)
    for _ in range(20):
        engine.launch(axpy, small_cfg, small[0], a, small[1], small[2])
    cp.cuda.runtime.deviceSynchronize()
    reps = 2000
    t0 = time.perf_counter()
    for _ in range(reps):
        engine.launch(axpy, small_cfg, small[0], a, small[1], small[2])
    launch_us = (time.perf_counter() - t0) / reps * 1e6
    t0 = time.perf_counter()
    for _ in range(reps):
        primal_plan.compiled[(1,), (256,)](small[0], 1.5, small[1], small[2])
    cp.cuda.runtime.deviceSynchronize()
    dispatcher_us = (time.perf_counter() - t0) / reps * 1e6

    gbs = lambda b, t: b / t / 1e9  # noqa: E731
    results = {
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "n": n,
        "copy_GBps": gbs(2 * 4 * n, t_copy),
        "primal_GBps": gbs(b_primal, t_primal),
        "forward": {"generated_ms": t_fwd_gen * 1e3, "hand_ms": t_fwd_hand * 1e3,
                    "ratio_generated_over_hand": t_fwd_gen / t_fwd_hand,
                    "GBps": gbs(b_fwd, t_fwd_gen), "fraction_of_copy": gbs(b_fwd, t_fwd_gen) / (copy_bw / 1e9)},
        "reverse": {"generated_ms": t_rev_gen * 1e3, "hand_ms": t_rev_hand * 1e3,
                    "hand_loads_first_ms": t_rev_hand_best * 1e3,
                    "ratio_generated_over_hand": t_rev_gen / t_rev_hand,
                    "ratio_generated_over_hand_loads_first": t_rev_gen / t_rev_hand_best,
                    "GBps": gbs(b_rev, t_rev_gen), "fraction_of_copy": gbs(b_rev, t_rev_gen) / (copy_bw / 1e9)},
        "active_scalar_reverse": {"hierarchical_ms": t_active_gen * 1e3,
                                  "atomic_per_thread_ms": t_active_atomic * 1e3,
                                  "speedup": t_active_atomic / t_active_gen},
        "launch_overhead_us": {"engine_launch": launch_us, "numba_dispatcher_only": dispatcher_us},
    }
    chart = [
        {"name": "forward: generated / hand-written", "value": results["forward"]["ratio_generated_over_hand"], "unit": "x"},
        {"name": "reverse: generated / hand-written", "value": results["reverse"]["ratio_generated_over_hand"], "unit": "x"},
        {"name": "reverse: generated / hand-written, loads first", "value": results["reverse"]["ratio_generated_over_hand_loads_first"], "unit": "x"},
        {"name": "forward: fraction of copy bandwidth", "value": results["forward"]["fraction_of_copy"], "unit": ""},
        {"name": "reverse: fraction of copy bandwidth", "value": results["reverse"]["fraction_of_copy"], "unit": ""},
        {"name": "Active reduction speedup over per-thread atomics", "value": results["active_scalar_reverse"]["speedup"], "unit": "x"},
        {"name": "engine launch overhead", "value": launch_us, "unit": "us"},
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"benchmarks": chart, "details": results}, indent=2))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
