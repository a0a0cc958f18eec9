"""The axpy case's DiffProblem with every array on the GPU: the engine's kernels launched on cupy
arrays, states, directions and results kept on the device, so the oracles' arithmetic runs there
(oracles/arrays.py). `harness bench --oracle-device 12,16,20,24,28` times the oracles on it: the
oracles' own cost, without the runner, the case adapter's launches and the relations around them
(`--oracle-scaling` measures that path)."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from harness.oracles.problem import StateVar


class DeviceAxpy:
    """out = a x + y over float32 arrays, out, x and y Duplicated, a Const (cases/axpy.yaml's state)."""
    dtype = "float32"
    writes_seeds = False        # seeds are copied into float32 shadows, never written
    fresh_results = True        # every result is an array of its own launch

    def __init__(self, engine, kernel, n: int, a: float = 1.5, seed: int = 0):
        import cupy as cp
        from harness.engine.runtime.launch import LaunchConfig
        self.xp, self.engine, self.kernel, self.a = cp, engine, kernel, a
        self.config = LaunchConfig.threads(n, 256)
        rng = cp.random.RandomState(seed)
        self.s0 = {"out": cp.zeros(n, cp.float32), "x": rng.standard_normal(n, dtype=cp.float32),
                   "y": rng.standard_normal(n, dtype=cp.float32)}
        self.inputs = [StateVar(k, (n,)) for k in ("out", "x", "y")]
        self.outputs = list(self.inputs)

    def base_point(self) -> dict:
        return {k: v.astype(self.xp.float64) for k, v in self.s0.items()}

    def primal64(self, state: dict) -> dict:
        cp = self.xp
        out, x, y = (cp.array(state[k], dtype=cp.float64, copy=True) for k in ("out", "x", "y"))
        self.engine.launch(self.kernel, self.config, out, np.float64(self.a), x, y, mode="primal")
        return {"out": out, "x": x, "y": y}

    def _derivative(self, seeds: dict, mode: str) -> dict:
        from harness.core.activity import Duplicated
        cp = self.xp
        values = {k: v.copy() for k, v in self.s0.items()}
        shadows = {k: cp.asarray(seeds[k], dtype=cp.float32).copy() for k in ("out", "x", "y")}
        self.engine.launch(self.kernel, self.config, Duplicated(values["out"], shadows["out"]), np.float32(self.a),
                           Duplicated(values["x"], shadows["x"]), Duplicated(values["y"], shadows["y"]), mode=mode)
        return {k: v.astype(cp.float64) for k, v in shadows.items()}

    def jvp(self, tangent: dict) -> dict:
        return self._derivative(tangent, "forward")

    def vjp(self, cotangent: dict) -> dict:
        return self._derivative(cotangent, "reverse")


def device_oracle_scaling(root: Path, exponents: list[int]) -> list[dict]:
    """Seconds of run_gradient_oracles per mode on DeviceAxpy at 2^k elements (a failure to run is
    reported in its row, not raised, so one size cannot hide the others)."""
    import cupy as cp

    from harness.backends import get_backend
    from harness.engine.runtime.launch import Engine
    from harness.cases.inputs import load_kernel
    from harness.oracles import run_gradient_oracles
    engine = Engine(get_backend("cuda"))
    kernel = load_kernel("kernels/elementwise.py:axpy", root)
    rows = []
    for k in exponents:
        for mode in ("forward", "reverse"):
            row = {"log2n": k, "mode": mode}
            try:
                problem = DeviceAxpy(engine, kernel, 1 << k)
                cp.cuda.runtime.deviceSynchronize()
                t0 = time.perf_counter()
                verdicts = run_gradient_oracles(problem, mode, rng=0)
                cp.cuda.runtime.deviceSynchronize()
                row.update(seconds=time.perf_counter() - t0, verdicts={v.name: v.verdict for v in verdicts})
            except Exception as exc:          # reported in the table: a size that does not fit, a bug
                row.update(seconds=float("nan"), error=f"{type(exc).__name__}: {exc}")
            problem = None
            cp.get_default_memory_pool().free_all_blocks()
            rows.append(row)
            print(f"[oracle-device] 2^{k} {mode}: {row['seconds']:.2f} s {row.get('error', '')}", flush=True)
    return rows
