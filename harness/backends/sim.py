"""numba's CUDA simulator: kernels run as Python threads over numpy arrays."""
from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

from harness.backends.base import Backend, CompileMemo, TargetConfig

# numba's simulator runs a block's threads as Python threads. A thread released by a barrier (or
# woken by any other wait) runs only once the running thread gives up the GIL, which it does every
# sys.getswitchinterval(): 5 ms by default, so each barrier costs milliseconds per thread. Alone on
# a core, barrier-shared-replay's reverse run took 49 s at 5 ms, 15 s at 0.2 ms, 9 s at 50 us; but
# with both cores busy (xdist) very short intervals cost system time in futex wake-ups: five case
# files (62 runs, -n 2) took 171 s at 5 ms, 182 s at 50 us and 128 s at 0.5 ms. The interval is the
# process's, so it is set for the launch only and restored after it. It is only ever lowered: a
# caller that interleaves threads more finely (the race mutants' 1 us, harness.selftest.mutants)
# keeps its own interval, or the races it provokes would stop showing.
SIM_SWITCH_INTERVAL_S = 5e-4
SWITCH_INTERVAL_ENV = "HARNESS_SIM_SWITCH_INTERVAL"     # seconds, to measure another value


@contextlib.contextmanager
def _quick_thread_switches():
    before = sys.getswitchinterval()
    wanted = float(os.environ.get(SWITCH_INTERVAL_ENV, SIM_SWITCH_INTERVAL_S))
    sys.setswitchinterval(min(before, wanted))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _as_numba_types(value):
    """A Python number as the type numba gives it when it compiles a launch (float64, int64).
    The simulator runs the kernel's Python instead, where numpy treats a Python number as
    "weak" (NEP 50): `np.float32(i) * h` stays float32 for a Python float h, while the compiled
    kernel computes it in float64, so on the simulator the value would differ from numba's."""
    if type(value) is float:
        return np.float64(value)
    if type(value) is int:
        return np.int64(value)
    return value


class SimBackend(Backend):
    name = "sim"

    def __init__(self):
        from numba.core import config
        if not config.ENABLE_CUDASIM:
            raise RuntimeError("the sim backend needs NUMBA_ENABLE_CUDASIM=1 before numba is imported")
        from numba import cuda
        from harness.backends import sim_block, sim_jit_options, sim_modules, sim_shared, sim_warp
        sim_jit_options.install()             # jit's build-only options (launch_bounds, ...)
        sim_warp.install()                    # the simulator has no warp shuffles of its own
        sim_modules.install()                 # numba.cuda.grid(...) through the numba package
        sim_block.install()                   # a GPU's launch limits and barrier rules; stoppable launches
        sim_shared.install()                  # one shared array per block and line, without a race
        self.cuda = cuda
        self.compiles = CompileMemo()

    def config(self, fastmath=False, debug=False) -> TargetConfig:
        return TargetConfig("cuda", None, fastmath, debug)    # the simulator runs CUDA semantics

    def asarray(self, host):
        from harness.problems.layouts import copy_with_layout       # a view keeps its strides and offset
        return np.array(host, copy=True) if host.flags.c_contiguous else copy_with_layout(host)

    def to_host(self, arr):
        return np.array(arr, copy=True)

    def is_array(self, value) -> bool:
        return isinstance(value, np.ndarray)

    def compile(self, pyfunc, signature, config):
        return self.compiles.get(pyfunc, signature, config, lambda fn: self.cuda.jit(fn))

    def launch(self, compiled, grid, block, args):
        # Pass arrays as the simulator's device arrays, not numpy arrays: those it would copy in and
        # out and refuse when not contiguous. So strided views keep their layout and arguments that
        # share memory share it inside the kernel too, as device arrays do on a GPU.
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        from harness.backends.sim_block import check_launch_dims
        check_launch_dims(tuple(np.atleast_1d(grid)), tuple(np.atleast_1d(block)))
        with _quick_thread_switches():
            compiled[grid, block](*[FakeCUDAArray(a) if isinstance(a, np.ndarray) and a.ndim > 0
                                    else _as_numba_types(a) for a in args])

    def fault_of(self, exc):
        # the simulator reports an out-of-bounds access as the thread's IndexError
        if isinstance(exc, IndexError):
            return f"out-of-bounds access ({exc})"
        return None

    @property
    def poisoned(self) -> bool:
        return bool(self._stuck())

    @property
    def poisoned_reason(self) -> str:
        return (f"an earlier launch that timed out left {len(self._stuck())} simulator threads that could not "
                "be stopped in this process (run with -n so a fresh worker takes over)")

    @staticmethod
    def _stuck():
        from harness.backends.sim_block import still_stuck
        return still_stuck()
