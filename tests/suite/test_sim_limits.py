"""the simulator refuses what a GPU refuses and survives a hung launch.

A block of more than 1024 threads, a grid beyond CUDA's limits and a barrier reached by only some
threads of a block (or different barriers in different branches) are errors, as on a GPU (which
refuses the launch or hangs). A launch that hangs is stopped when the run's time limit fires: its
threads are killed, so later launches in the same process run normally.
"""
from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sim(launching_backend):
    if launching_backend.name != "sim":
        pytest.skip("simulator-only checks")
    return launching_backend


@pytest.fixture(scope="module")
def k(sim):
    name = "harness_reliability_kernels"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "kernels_reliability.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def launch(sim, fn, grid, block, *args):
    compiled = sim.compile(fn, None, sim.config())
    arrays = [sim.asarray(a) for a in args]
    sim.launch(compiled, grid, block, arrays)
    return [sim.to_host(a) for a in arrays]


@pytest.mark.parametrize("grid, block, fragment", [
    ((1,), (2048,), "1024 threads"),
    ((1,), (4096,), "1024 threads"),
    ((1,), (64, 32, 1), "1024 threads"),
    ((1,), (1, 1, 128), "block"),
    ((1, 65536), (1,), "grid"),
    ((2 ** 31,), (1,), "grid"),
    ((0,), (32,), "grid"),
])
def test_launch_limits_are_refused(sim, k, grid, block, fragment):
    from harness.core.errors import KernelError
    x = np.zeros(32)
    with pytest.raises(KernelError, match=fragment):
        launch(sim, k.copy, grid, block, x, x.copy())


def test_launch_within_limits_runs(sim, k):
    x = np.arange(1024.0)
    _, y = launch(sim, k.copy, (1,), (1024,), x, np.zeros(1024))
    assert (y == x).all()


def test_barrier_reached_by_some_threads_is_an_error(sim, k):
    from harness.core.errors import KernelFaultError
    with pytest.raises(KernelFaultError, match=r"barrier .*16 of 32 threads"):
        launch(sim, k.barrier_in_half, (1,), (32,), np.zeros(32))


def test_different_barriers_in_different_branches_are_an_error(sim, k):
    from harness.core.errors import KernelFaultError
    with pytest.raises(KernelFaultError, match="different barriers"):
        launch(sim, k.barrier_per_branch, (1,), (32,), np.zeros(32))


def test_uniform_barrier_still_works(sim, k):
    x = np.arange(32.0)
    x2, _ = launch(sim, k.uniform_barrier, (1,), (32,), x, np.zeros(32))
    assert (x2 == np.roll(x, -1)).all()


HUNG_LAUNCH_SCRIPT = """
import importlib.util, sys, threading, time
import numpy as np
from harness.backends import get_backend
sim = get_backend("sim")                      # before numba is imported
spec = importlib.util.spec_from_file_location("k", sys.argv[1])
k = importlib.util.module_from_spec(spec)
spec.loader.exec_module(k)
from harness.core.errors import LaunchTimeoutError
from harness.execution.runner import time_limit

def launch(fn, grid, block, *args):
    arrays = [sim.asarray(a) for a in args]
    sim.launch(sim.compile(fn, None, sim.config()), grid, block, arrays)
    return [sim.to_host(a) for a in arrays]

def block_threads():
    return [t for t in threading.enumerate() if type(t).__name__ == "BlockThread"]

started = time.time()
try:
    with time_limit(1.0, "spin"):
        launch(k.spin, (1,), (32,), np.zeros(4))
    sys.exit("the hung launch returned")
except LaunchTimeoutError:
    pass
assert time.time() - started < 15, time.time() - started
deadline = time.time() + 30                   # a loaded machine may take a moment to schedule them
while block_threads() and time.time() < deadline:
    time.sleep(0.2)
assert block_threads() == [], "a thread of the hung launch keeps spinning"
assert not sim.poisoned
x = np.arange(64.0)
t0 = time.time()
_, y = launch(k.copy, (2,), (32,), x, np.zeros(64))
assert (y == x).all() and time.time() - t0 < 5
print("ok")
"""


def test_hung_launch_is_killed_and_later_launches_run(sim):
    """In a process of its own: should a thread of the hung launch outlive its grace period on a
    loaded machine, it marks that process unusable, and must not take the tests after it along."""
    import os
    import subprocess
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", HUNG_LAUNCH_SCRIPT, str(HERE / "kernels_reliability.py")],
                          capture_output=True, text=True, timeout=180, env=env, cwd=HERE.parent)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr


SPIN_PROJECT_KERNELS = '''
from numba import cuda


def spin(x):
    while x[0] == 0.0:
        x[1] += 1.0


def double(x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = 2.0 * x[i]
'''


def test_hung_case_does_not_poison_later_runs_of_its_session(tmp_path):
    """The issue's scenario: in one process (no xdist) a case whose kernel spins times out, and the
    cases after it still pass, each well within the limit."""
    import json
    import os
    import subprocess
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(SPIN_PROJECT_KERNELS)
    (tmp_path / "cases").mkdir()
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.session.plugin"]\n')
    (tmp_path / "cases" / "a-spin.yaml").write_text(
        "id: a-spin\nkernel: kernels/k.py:spin\nlaunch: {threads: 4, block: 4}\n"
        "args:\n  x: {array: {shape: [4], dtype: float64, init: zeros}, activity: const}\nmodes: [primal]\n")
    (tmp_path / "cases" / "b-double.yaml").write_text(
        "id: b-double\nkernel: kernels/k.py:double\nlaunch: {threads: 8, block: 8}\n"
        "args:\n  x: {array: {shape: [8], dtype: float64, init: normal}, activity: const}\n"
        "  y: {array: {shape: [8], dtype: float64, init: zeros}, activity: const}\n"
        "modes: [primal]\ndtypes: [float32, float64]\n")
    env = dict(os.environ, PYTHONPATH=str(HERE.parent), HARNESS_RUN_TIMEOUT="3")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    results = tmp_path / "r.jsonl"
    done = subprocess.run([sys.executable, "-m", "pytest", "cases", "--backend", "sim", "-p", "no:cacheprovider",
                           "-q", "--rootdir", str(tmp_path), "--results", str(results), "--html", ""],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    runs = {r["case_id"] + ":" + str(r["dtype"]): r for r in map(json.loads, results.read_text().splitlines())
            if r["type"] == "run"}
    assert runs["a-spin:None"]["state"] == "ERROR", done.stdout
    assert runs["a-spin:None"]["error"]["type"] == "LaunchTimeoutError"
    for key in ("b-double:float32", "b-double:float64"):
        assert runs[key]["state"] == "PASS", (key, runs[key]["message"])
        assert runs[key]["duration"] < 3


def test_unstoppable_launch_retires_its_worker_and_nothing_is_counted_twice(tmp_path):
    """A kernel blocked inside C (a long sleep) cannot be stopped: its xdist worker reports the
    run (ERROR, timeout), then leaves; xdist replaces it, the other runs pass, and the worker's
    departure is neither a crash record nor a second failure."""
    import json
    import os
    import subprocess
    pytest.importorskip("xdist")
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(SPIN_PROJECT_KERNELS + "\n\ndef sleepy(x):\n"
                                               "    import time\n    time.sleep(40)\n")
    (tmp_path / "cases").mkdir()
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.session.plugin"]\n')
    (tmp_path / "cases" / "a-sleep.yaml").write_text(
        "id: a-sleep\nkernel: kernels/k.py:sleepy\nlaunch: {threads: 2, block: 2}\n"
        "args:\n  x: {array: {shape: [4], dtype: float64, init: zeros}, activity: const}\nmodes: [primal]\n")
    for n in range(3):
        (tmp_path / "cases" / f"b{n}.yaml").write_text(
            f"id: b{n}\nkernel: kernels/k.py:double\nlaunch: {{threads: 8, block: 8}}\n"
            "args:\n  x: {array: {shape: [8], dtype: float64, init: normal}, activity: const}\n"
            "  y: {array: {shape: [8], dtype: float64, init: zeros}, activity: const}\n"
            "modes: [primal]\ndtypes: [float32, float64]\n")
    env = dict(os.environ, PYTHONPATH=str(HERE.parent), HARNESS_RUN_TIMEOUT="3")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    results = tmp_path / "r.jsonl"
    done = subprocess.run([sys.executable, "-m", "pytest", "cases", "--backend", "sim", "-p", "no:cacheprovider",
                           "-n", "2", "--rootdir", str(tmp_path), "--results", str(results), "--html", ""],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    runs = [r for r in map(json.loads, results.read_text().splitlines()) if r["type"] == "run"]
    assert len(runs) == 7, done.stdout
    states = sorted((r["case_id"], r["state"]) for r in runs)
    assert states == [("a-sleep", "ERROR")] + [(f"b{n}", "PASS") for n in range(3) for _ in range(2)], done.stdout
    assert "1 failed, 6 passed" in done.stdout and "crashed" not in done.stdout.split("short test summary")[-1]


def test_time_limit_during_thread_start_still_stops_the_block(sim, k):
    """The run's time limit may fire while a block's threads are still being started (a loaded
    machine): the launch ends with LaunchTimeoutError, not 'cannot join thread before it is started'
    (seen in CI), and no thread of it keeps running."""
    import threading
    import time

    from harness.core.errors import LaunchTimeoutError
    from harness.execution.runner import time_limit
    real_start, calls = threading.Thread.start, []

    def slow_start(self):
        calls.append(self)
        if len(calls) == 5:
            time.sleep(1.5)               # the 1 s limit fires here, before this thread starts
        real_start(self)
    threading.Thread.start = slow_start
    try:
        with pytest.raises(LaunchTimeoutError):
            with time_limit(1.0, "spin"):
                launch(sim, k.spin, (1,), (32,), np.zeros(4))
    finally:
        threading.Thread.start = real_start
    deadline = time.time() + 30
    while any(t.is_alive() for t in calls) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(t.is_alive() for t in calls)
    assert not sim.poisoned
