"""The reverse of the dynamic-loop Horner (harness bench's horner_dynamic_deg8) in each form the
engine can generate, next to the hand-written kernels, on a GPU, in one run. Run from the project
root:

    python benchmarks/loop_reverse_forms.py [log2n] [degree ...]

Per degree (default 8 and 20) it prints milliseconds per launch (CUDA events, median of batches)
and registers per thread of the generated reverse in the Jacobian form (the default: the loop's
derivative carried forward, emit_loop_jacobian.py), then with the Jacobian form off
(loop_jacobian_limit 0) at recompute_limit 0 (every iteration taped), 16 (iterations below 16
recomputed from the loop's entry registers, later ones taped) and 64 (all recomputed, no tape),
and of the hand kernels of harness/bench/reference.py (direct, recompute, tape). Past tape_size
(64) only the Jacobian form and the direct hand kernel run (the other forms refuse the launch).
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def regs(dispatcher) -> str:
    try:
        return str(max(dispatcher.get_regs_per_thread().values()))
    except Exception as exc:            # a diagnostic, never the point of the run
        return f"? ({type(exc).__name__})"


def row(label: str, seconds: float, registers: str) -> None:
    print(f"    {label:32s} {seconds * 1e3:8.3f} ms   {registers} registers")


def main(log2n: int, degrees: list[int]) -> None:
    import cupy as cp
    import numpy as np
    from numba import cuda

    from harness.backends import get_backend
    from harness.bench import reference
    from harness.bench.suite import by_name
    from harness.bench.timing import event_time
    from harness.engine.runtime.launch import Engine, EngineOptions, LaunchConfig
    from harness.cases.inputs import load_kernel

    (b,) = by_name(["horner_dynamic_deg8"])
    kernel = load_kernel(b.kernel, ROOT)
    n = 1 << log2n
    config = LaunchConfig.threads(n, b.block)
    backend = get_backend("cuda")
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, n = 2^{log2n}")
    for degree in degrees:
        values = b.values(cp, n)
        values["c"] = (cp.asarray(np.random.default_rng(1).uniform(0.5, 1.5, max(degree, 1)).astype(np.float32)), None)
        values["n"] = (degree, None)
        print(f"degree {degree}:")
        bound = None
        forms = [("generated, Jacobian form", {})]
        if degree <= EngineOptions().tape_size:
            forms += [(f"generated, recompute_limit {limit}", {"loop_jacobian_limit": 0, "recompute_limit": limit})
                      for limit in (0, 16, 64)]
        for label, options in forms:
            engine = Engine(backend, EngineOptions(**options))
            bound = engine.bind(kernel, config, *b.wrapped(values, "reverse"), mode="reverse")
            t = event_time(bound.launch)
            row(label, t, regs(bound.plan.compiled))
        hands = ["direct"] + (["recompute", "tape"] if degree <= reference.TAPE else [])
        for name in (f"horner_dynamic_reverse_{h}" for h in hands):
            k = cuda.jit(getattr(reference, name))
            t = event_time(lambda: k[config.grid, config.block](*bound.kernel_args))
            row(f"hand, {name[len('horner_dynamic_reverse_'):]}", t, regs(k))
        cp.cuda.runtime.deviceSynchronize()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(args[0] if args else 26, args[1:] or [8, 20])
