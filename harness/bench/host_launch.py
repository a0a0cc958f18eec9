"""Host cost of Engine.launch on a cached plan, measured without a GPU: the ptx backend compiles
the kernel for real, and a stub backend takes the place of the driver (its launch, packing and
synchronisation do nothing), so what is timed is the engine's own per-call work
(`harness bench --launch-host`). On a GPU, `harness bench` times the real thing."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import time
from functools import partial

from harness.bench.timing import host_overhead as _wall_overhead

host_overhead = partial(_wall_overhead, clock=time.process_time)   # CPU time: steadier on a shared host


def stub_backend():
    from harness.backends import get_backend
    real = get_backend("ptx")

    class StubLaunches(type(real)):
        """The ptx backend's compiler with launches that do nothing."""
        can_launch = True

        def __init__(self):
            self.__dict__.update(vars(real))        # numba, and the compile memo the ptx tier keeps

        def launch(self, compiled, grid, block, args):
            pass

        def prepare_launch(self, compiled, grid, block, args):
            return _nothing

    return StubLaunches()


def _nothing():
    pass


def host_launch_overhead(root: Path, n: int = 256) -> dict:
    """CPU microseconds per call: Engine.launch (cached plan, same buffers), Engine.launch with new
    buffers of the same description every call, and the bound launch; primal, forward and reverse
    axpy. `python_call_floor` (building four annotated arguments and calling a Python function with
    them) is the yardstick: it says how fast this host runs Python."""
    from harness.core.activity import Active, Duplicated
    from harness.engine.runtime.launch import Engine, LaunchConfig
    from harness.cases.inputs import load_kernel
    engine = Engine(stub_backend())
    axpy = load_kernel("kernels/elementwise.py:axpy", root)
    cfg = LaunchConfig.threads(n, 256)
    arr = lambda: np.ones(n, np.float32)  # noqa: E731
    out, dout, x, dx, y, dy = (arr() for _ in range(6))
    res = {}

    def floor(*args):
        return args
    res["python_call_floor"] = host_overhead(lambda: floor(Duplicated(out, dout), np.float32(1.5),
                                                           Duplicated(x, dx), Duplicated(y, dy)))
    for mode in ("primal", "forward", "reverse"):
        if mode == "primal":
            args = lambda: (out, np.float32(1.5), x, y)  # noqa: E731
        else:
            a = Active(np.float32(1.5)) if mode == "reverse" else np.float32(1.5)
            args = lambda a=a: (Duplicated(out, dout), a, Duplicated(x, dx), Duplicated(y, dy))  # noqa: E731
        bound = engine.bind(axpy, cfg, *args(), mode=mode)
        res[f"{mode}_engine_launch"] = host_overhead(lambda: engine.launch(axpy, cfg, *args(), mode=mode))
        res[f"{mode}_bound_launch"] = host_overhead(bound.launch)
    fresh = [tuple(arr() for _ in range(4)) for _ in range(64)]      # kept alive: distinct pointers
    k = iter(range(10 ** 9))

    def new_buffers():
        o, xx, yy, _ = fresh[next(k) % len(fresh)]
        engine.launch(axpy, cfg, o, np.float32(1.5), xx, yy, mode="primal")
    res["primal_engine_launch_new_buffers"] = host_overhead(new_buffers, repeats=500)
    return res
