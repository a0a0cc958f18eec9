"""A DiffProblem computed by numpy alone (axpy over three n-element arrays), so the oracles' own
host cost can be measured without a GPU or the simulator: `harness bench --oracle-host 20,22,24`."""
from __future__ import annotations

import time

import numpy as np

from harness.oracles.problem import StateVar


class HostAxpy:
    """out = a x + y, with out, x and y differentiable (the state of the axpy case). `xp`: the array
    module the problem keeps its arrays in (numpy; the tests pass a fake device module)."""
    dtype = "float32"

    def __init__(self, n: int, a: float = 1.5, seed: int = 0, xp=np):
        rng = np.random.default_rng(seed)
        self.a, self.xp = a, xp
        self.s0 = {"out": xp.zeros(n), "x": xp.asarray(rng.standard_normal(n).astype(np.float32).astype(np.float64)),
                   "y": xp.asarray(rng.standard_normal(n).astype(np.float32).astype(np.float64))}
        self.inputs = [StateVar(k, (n,)) for k in ("out", "x", "y")]
        self.outputs = list(self.inputs)
        self.launches = 0

    def base_point(self) -> dict:
        return {k: v.copy() for k, v in self.s0.items()}

    def primal64(self, state: dict) -> dict:
        self.launches += 1
        return {"out": self.a * state["x"] + state["y"], "x": state["x"], "y": state["y"]}

    @staticmethod
    def _float32(v):
        return v.astype(np.float32).astype(np.float64)       # the engine's float32 roundoff

    def jvp(self, tangent: dict) -> dict:
        self.launches += 1
        r = self._float32
        return {"out": r(self.a * tangent["x"] + tangent["y"]), "x": r(tangent["x"]), "y": r(tangent["y"])}

    def vjp(self, cotangent: dict) -> dict:
        self.launches += 1
        r, w = self._float32, cotangent
        return {"out": self.xp.zeros_like(w["out"]), "x": r(w["x"] + self.a * w["out"]), "y": r(w["y"] + w["out"])}


def host_oracle_scaling(exponents: list[int]) -> list[dict]:
    """Seconds of run_gradient_oracles (FD, zero guard, dot) per mode on a numpy axpy of 2^k entries:
    wall time and this process's CPU time (on a shared host the second is the steadier)."""
    from harness.oracles import run_gradient_oracles
    rows = []
    for k in exponents:
        problem = HostAxpy(1 << k)
        for mode in ("forward", "reverse"):
            problem.launches = 0
            t0, c0 = time.perf_counter(), time.process_time()
            verdicts = run_gradient_oracles(problem, mode, rng=0)
            rows.append({"log2n": k, "mode": mode, "seconds": time.perf_counter() - t0,
                         "cpu_seconds": time.process_time() - c0,
                         "launches": problem.launches, "verdicts": {v.name: v.verdict for v in verdicts}})
    return rows
