"""Run the benchmark set on the CUDA backend and tabulate ratios measured in one run."""
from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import numpy as np

from harness.bench.suite import Bench, hand_launcher
from harness.bench.timing import event_time, host_overhead, wall_time

MODES = ("forward", "reverse")


def _jax_times(bench: Bench, host_values: dict, repeats: int) -> dict:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp
    from harness.bench import jaxref
    f, primals = jaxref.build(bench.jax, host_values)
    out = f(*primals)
    tangents = tuple(jnp.ones_like(p) for p in primals)
    cot = jnp.ones_like(out)
    # Both return the primal output too, as the generated kernels compute it (JAX still writes
    # fresh gradient arrays rather than adding into existing shadows: two streams fewer).
    jvp = jax.jit(lambda *p: jax.jvp(f, p, tangents))

    def vjp_fn(*p):
        value, pull = jax.vjp(f, *p)
        return value, pull(cot)
    vjp = jax.jit(vjp_fn)
    fwd = wall_time(lambda: jax.block_until_ready(jvp(*primals)), repeats)
    rev = wall_time(lambda: jax.block_until_ready(vjp(*primals)), repeats)
    return {"forward": fwd, "reverse": rev}


def run_benches(benches: list[Bench], root: Path, log2n: int, repeats: int, with_jax: bool,
                options=None) -> dict:
    import cupy as cp

    from harness.backends import get_backend
    from harness.engine.runtime.launch import Engine
    from harness.core.errors import UnsupportedError
    from harness.cases.inputs import load_kernel
    from harness.bench import libref

    backend = get_backend("cuda")
    engine = Engine(backend, options)         # options: EngineOptions (None: the defaults)
    engines = {}                              # tape_size -> an engine with that tape (tile loops)
    n = 1 << log2n
    src, dst = cp.ones(n, np.float32), cp.zeros(n, np.float32)
    t_copy = event_time(lambda: cp.copyto(dst, src), repeats)
    copy_bps = 2 * 4 * n / t_copy
    rows = []
    for b in benches:
        kernel = load_kernel(b.kernel, root)
        values = b.values(cp, n)
        config = b.config(n)
        row = {"name": b.name, "kernel": b.kernel, "size": b.size(n), "geometry": b.geometry, "modes": {}}
        plain = [v for name, _, _ in b.args for v in [values[name][0]]]
        primal = engine.bind(kernel, config, *plain, mode="primal")
        row["primal_ms"] = event_time(primal.launch, repeats) * 1e3
        jax_t = {}
        if with_jax and b.jax:
            host = {k: (cp.asnumpy(v) if hasattr(v, "device") else v, None) for k, (v, _) in values.items()}
            try:
                jax_t = _jax_times(b, host, repeats)
            except Exception as exc:          # a reference that cannot run is reported, not fatal
                row["jax_error"] = f"{type(exc).__name__}: {exc}"
        tape = b.tape_size(n, engine.options.tape_size)
        if tape not in engines:
            engines[tape] = engine if tape == engine.options.tape_size else \
                Engine(backend, dataclasses.replace(engine.options, tape_size=tape))
        for mode in MODES:
            try:
                # one checked launch first: a refusal, a fault or a tape overflow (a reverse sweep
                # that would replay only part of the loop) is the row's result, not a timing
                engines[tape].launch(kernel, config, *b.wrapped(values, mode), mode=mode)
                bound = engines[tape].bind(kernel, config, *b.wrapped(values, mode), mode=mode)
            except UnsupportedError as exc:   # a refusal is the row's result, not the end of the table
                row["modes"][mode] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            gen = event_time(bound.launch, repeats)
            elements = sum(int(np.prod(b.shape(kind, n))) for _, kind, _ in b.args if kind == "n")
            m = {"generated_ms": gen * 1e3,
                 "fraction_of_copy": b.streams(mode) * 4 * elements / gen / copy_bps,
                 "over_primal": gen / (row["primal_ms"] / 1e3)}
            for label, fname in b.hand.get(mode, {}).items():
                hand = hand_launcher(fname, config, bound.grid)
                t = event_time(lambda: hand(bound.kernel_args), repeats)
                m[f"{label}_ms"] = t * 1e3
                m[f"generated_over_{label}"] = gen / t
            for label, fname in b.library.get(mode, {}).items():
                t = event_time(getattr(libref, fname)(values), repeats)
                m[f"{label}_ms"] = t * 1e3
                m[f"generated_over_{label}"] = gen / t
            if mode in jax_t:
                m["jax_ms"] = jax_t[mode] * 1e3
                m["generated_over_jax"] = gen / jax_t[mode]
            row["modes"][mode] = m
        rows.append(row)
    return {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "n": n,
            "copy_GBps": copy_bps / 1e9, "rows": rows, "launch_overhead_us": launch_overhead(engine, root)}


def launch_overhead(engine, root: Path) -> dict:
    """Host microseconds per launch of a 256-element axpy: Engine.launch (its call-site cache hit:
    it also synchronises and checks for faults), a bound launch (only enqueues), a bound launch
    followed by the synchronisation Engine.launch does, and numba's dispatcher alone."""
    import cupy as cp

    from harness.engine.runtime.launch import LaunchConfig
    from harness.cases.inputs import load_kernel
    axpy = load_kernel("kernels/elementwise.py:axpy", root)
    out, x, y = cp.zeros(256, np.float32), cp.ones(256, np.float32), cp.ones(256, np.float32)
    cfg = LaunchConfig.threads(256, 256)
    bound = engine.bind(axpy, cfg, out, np.float32(1.5), x, y)
    compiled = bound.plan.compiled
    def bound_and_sync():
        bound.launch()
        engine.backend.synchronize()
    res = {"engine_launch": host_overhead(lambda: engine.launch(axpy, cfg, out, np.float32(1.5), x, y)),
           "bound_launch": host_overhead(bound.launch),
           "bound_launch_and_synchronize": host_overhead(bound_and_sync),
           "numba_dispatcher": host_overhead(lambda: compiled[(1,), (256,)](out, 1.5, x, y))}
    cp.cuda.runtime.deviceSynchronize()
    return res


class LaunchTimer:
    """The runner's backend, with the seconds its kernel launches take summed (each launch
    synchronised, as Engine.launch does after it anyway): the part of a checked case that is the
    kernels' own, next to the oracles' and relations' work around them."""

    def __init__(self, backend):
        self._backend, self.seconds, self.launches = backend, 0.0, 0

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def _timed(self, step):
        def run():
            t0 = time.perf_counter()
            step()
            self._backend.synchronize()
            self.seconds += time.perf_counter() - t0
            self.launches += 1
        return run

    def launch(self, compiled, grid, block, args):
        self._timed(lambda: self._backend.launch(compiled, grid, block, args))()

    def prepare_launch(self, compiled, grid, block, args):
        return self._timed(self._backend.prepare_launch(compiled, grid, block, args))


def _device_pool():
    try:
        import cupy
        return cupy.get_default_memory_pool()
    except ImportError:
        return None


def axpy_case_text(k: int) -> str:
    """One axpy case at 2^k float32 elements, forward and reverse (the scaling measurement's case)."""
    n = 1 << k
    return (f"id: axpy-2e{k}\ntitle: axpy at 2^{k}\nkernel: kernels/elementwise.py:axpy\n"
            f"launch: {{threads: {n}, block: 256}}\nargs:\n"
            f"  out: {{array: {{shape: [{n}], dtype: float32, init: zeros}}, activity: duplicated}}\n"
            f"  a: {{scalar: {{value: 1.5, dtype: float32}}, activity: const}}\n"
            f"  x: {{array: {{shape: [{n}], dtype: float32, init: normal}}, activity: duplicated}}\n"
            f"  y: {{array: {{shape: [{n}], dtype: float32, init: normal}}, activity: duplicated}}\n"
            "modes: [forward, reverse]\n")


def oracle_scaling(root: Path, exponents: list[int], backend_name: str = "cuda") -> list[dict]:
    """One axpy case (forward and reverse, every oracle and relation) checked through the runner,
    the path `pytest cases` and `harness run` take, as the arrays grow: total seconds, and split
    into setup (the case's inputs built on the host), oracles, relations, and the kernel launches
    inside those two; with the device memory pool's high-water mark. The case file is written into
    a temporary folder, never into cases/ (a concurrent suite run would collect it)."""
    import tempfile

    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    runner = Runner(root, backend_name)
    timer = runner.backend = LaunchTimer(runner.backend)
    pool = _device_pool() if backend_name == "cuda" else None
    rows = []
    with tempfile.TemporaryDirectory(prefix="harness-oracle-scaling-") as tmp:
        for k in exponents:
            case_path = Path(tmp) / f"axpy-2e{k}.yaml"
            case_path.write_text(axpy_case_text(k))
            cases = load_case_file(case_path, root, max_elements=1 << 31)   # the point is size
            for run in [r for case in cases for r in expand_runs(case, backend_name)]:
                timer.seconds, timer.launches = 0.0, 0
                if pool is not None:
                    pool.free_all_blocks()
                t0 = time.time()
                outcome = runner.execute(run)
                row = {"log2n": k, "run": run.name, "state": outcome.state, "seconds": time.time() - t0,
                       "timings": dict(outcome.timings), "launch_s": timer.seconds, "launches": timer.launches}
                if pool is not None:
                    row["device_pool_gb"] = pool.total_bytes() / 2 ** 30
                if outcome.error is not None:
                    row["error"] = f"{outcome.error.type}: {outcome.error.message[:300]}"
                rows.append(row)
                print(f"[oracle-scaling] 2^{k} {run.name}: {row['seconds']:.1f} s ({outcome.state}) "
                      + json.dumps({**{key: round(v, 2) for key, v in row["timings"].items()},
                                    "launch_s": round(row["launch_s"], 2), "launches": row["launches"],
                                    "pool_gb": round(row.get("device_pool_gb", 0.0), 1)})
                      + (f" {row['error']}" if "error" in row else ""), flush=True)
    return rows


def table(result: dict) -> str:
    if "rows" not in result:
        return ""
    lines = [f"{result['device']}, n = {result['n']:,} float32, copy {result['copy_GBps']:.0f} GB/s",
             f"{'benchmark':22} {'mode':8} {'gen ms':>9} {'hand ms':>9} {'gen/hand':>9} {'of copy':>8} {'jax ms':>9} {'gen/jax':>8}"]
    for row in result["rows"]:
        for mode, m in row["modes"].items():
            if "error" in m:
                lines.append(f"{row['name']:22} {mode:8} {m['error'][:100]}")
                continue
            hand = m.get("hand_ms")
            lines.append(f"{row['name']:22} {mode:8} {m['generated_ms']:9.3f} "
                         f"{hand if hand is not None else float('nan'):9.3f} "
                         f"{m.get('generated_over_hand', float('nan')):9.2f} {m['fraction_of_copy']:8.2f} "
                         f"{m.get('jax_ms', float('nan')):9.3f} {m.get('generated_over_jax', float('nan')):8.2f}")
            for key in sorted(k for k in m if k.startswith("generated_over_") and k not in
                              ("generated_over_hand", "generated_over_jax")):   # other references
                label = key[len("generated_over_"):]
                lines.append(f"{'':22} {'':8} {'':9} {m[label + '_ms']:9.3f} {m[key]:9.2f}  ({label})")
    lo = result.get("launch_overhead_us", {})
    if lo:
        lines.append("host overhead per launch (us): " + ", ".join(f"{k} {v:.1f}" for k, v in lo.items()))
    return "\n".join(lines)


def chart(result: dict) -> list[dict]:
    """The report's benchmark section: ratios first (they travel between machines), then times."""
    out = []
    for row in result.get("rows", []):
        for mode, m in row["modes"].items():
            keys = [("generated_over_hand", "x")] + [(k, "x") for k in sorted(m) if k.startswith("generated_over_")
                                                     and k not in ("generated_over_hand", "generated_over_jax")]
            for key, unit in keys + [("generated_over_jax", "x"), ("fraction_of_copy", "")]:
                if key in m:
                    out.append({"name": f"{row['name']} {mode}: {key.replace('_', ' ')}", "value": m[key], "unit": unit})
    for k, v in result.get("launch_overhead_us", {}).items():
        out.append({"name": f"host overhead: {k}", "value": v, "unit": "us"})
    for k, v in result.get("launch_host_us", {}).items():
        out.append({"name": f"host overhead, stub launches (no GPU): {k}", "value": v, "unit": "us"})
    for row in result.get("oracle_scaling", []):
        where = f"one axpy case checked through the runner at 2^{row['log2n']}: {row['run']}"
        out.append({"name": where, "value": row["seconds"], "unit": "s"})
        for key, label in (("oracles_s", "oracles"), ("relations_s", "relations"), ("setup_s", "setup")):
            if key in row.get("timings", {}):
                out.append({"name": f"{where}, {label}", "value": row["timings"][key], "unit": "s"})
        if "launch_s" in row:
            out.append({"name": f"{where}, kernel launches ({row['launches']})", "value": row["launch_s"], "unit": "s"})
    for row in result.get("oracle_device", []):
        out.append({"name": f"oracles on the GPU (device axpy problem) at 2^{row['log2n']}: {row['mode']}",
                    "value": row["seconds"], "unit": "s"})
    for row in result.get("oracle_host", []):
        out.append({"name": f"oracles on the host (numpy problem) at 2^{row['log2n']}: {row['mode']}",
                    "value": row["seconds"], "unit": "s"})
    return out


def write(result: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"benchmarks": chart(result), "details": result}, indent=2))
