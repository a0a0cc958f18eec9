"""The simulator's shared arrays: one per block and line, also when threads switch inside the
allocation (harness/backends/sim_shared.py), and launches run with a short switch interval."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest


def _allocate_on_one_line(shared):
    return shared.array((4,), np.float64)


def _allocate_from_threads(shared, n=16):
    got, start = [None] * n, threading.Barrier(n)

    def thread(k):
        start.wait()
        got[k] = _allocate_on_one_line(shared)
    threads = [threading.Thread(target=thread, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def test_threads_that_switch_inside_the_allocation_get_one_array(launching_backend, monkeypatch):
    """np.empty made to give up the GIL is the thread switch between the simulator's lookup and
    its store: the simulator's own method then hands threads arrays of their own; the installed
    one hands all of them the first."""
    if launching_backend.name != "sim":
        pytest.skip("the simulator's shared arrays")
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    from harness.backends import sim_shared

    real_empty = np.empty

    def slow_empty(*args, **kwargs):
        time.sleep(0.001)
        return real_empty(*args, **kwargs)

    monkeypatch.setattr(np, "empty", slow_empty)
    assert getattr(FakeCUDAShared.array, "_harness", False)
    assert len({id(a) for a in _allocate_from_threads(FakeCUDAShared(0))}) == 1
    monkeypatch.setattr(FakeCUDAShared, "array", sim_shared._original_array)
    assert len({id(a) for a in _allocate_from_threads(FakeCUDAShared(0))}) > 1     # the simulator's race


def test_launches_switch_threads_quickly_and_restore_the_interval(launching_backend):
    if launching_backend.name != "sim":
        pytest.skip("the simulator's launches")
    from harness.backends.sim import SIM_SWITCH_INTERVAL_S
    seen = []

    class Kernel:           # what `compiled[grid, block](*args)` runs under, recorded
        def __getitem__(self, config):
            return lambda *args: seen.append(sys.getswitchinterval())

    before = sys.getswitchinterval()
    launching_backend.launch(Kernel(), 1, 4, [np.zeros(4)])
    assert seen == [pytest.approx(SIM_SWITCH_INTERVAL_S)] and sys.getswitchinterval() == before


def test_launches_keep_a_finer_interval_their_caller_set(launching_backend):
    """The race mutants interleave threads every microsecond around a launch; a launch that raised
    the interval to its own 0.5 ms let drop-tangent-atomic survive in CI."""
    if launching_backend.name != "sim":
        pytest.skip("the simulator's launches")
    seen = []

    class Kernel:
        def __getitem__(self, config):
            return lambda *args: seen.append(sys.getswitchinterval())

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        launching_backend.launch(Kernel(), 1, 4, [np.zeros(4)])
        assert seen == [pytest.approx(1e-6)] and sys.getswitchinterval() == pytest.approx(1e-6)
    finally:
        sys.setswitchinterval(before)
