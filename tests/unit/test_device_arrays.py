"""The oracles, the relations and the case adapter on device arrays.

On a GPU the case adapter hands cupy arrays to the oracles, and a host round trip of a
state-sized array costs seconds at 2^24 elements. Here a fake device module (tests/device_fake.py)
stands in for cupy: its arrays refuse implicit host conversion, as cupy's do, and count what does
cross. The tests run the oracles and whole cases on it and require that only scalars and the few
worst entries of a verdict reach the host, whatever the size of the arrays; and that memory stays
bounded as the oracles refine (counted by tracemalloc on numpy, not timed).
"""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from harness.bench.host_problem import HostAxpy
from harness.oracles import run_gradient_oracles
from harness.oracles.tolerance import MAX_WORST

from tests.device_fake import FAKE, TRANSFERS, FakeDeviceArray, FakeDeviceBackend, HostTransferError

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = 4 * MAX_WORST          # Comparison.worst ranks at most this many candidates on the host


class WrongAxpy(HostAxpy):
    """axpy whose derivative of `out` (forward) or of `x` (reverse) is 1.5 times too large."""

    def jvp(self, tangent):
        got = super().jvp(tangent)
        got["out"] = got["out"] * 1.5
        return got

    def vjp(self, cotangent):
        got = super().vjp(cotangent)
        got["x"] = got["x"] * 1.5
        return got


def test_the_fake_device_refuses_host_conversion():
    a = FAKE.asarray(np.arange(100.0))
    with pytest.raises(HostTransferError):
        np.asarray(a)
    with pytest.raises(HostTransferError):
        a + np.ones(100)                      # mixing with host arrays fails, as it does for cupy
    TRANSFERS.reset()
    assert float((a * 2).sum()) == 9900.0 and TRANSFERS.scalars == 1
    assert isinstance(np.abs(a), FakeDeviceArray) and isinstance(a[3], FakeDeviceArray)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("problem_type", [HostAxpy, WrongAxpy])
def test_oracles_on_device_arrays_bring_back_only_scalars_and_the_worst_entries(mode, problem_type):
    n = 1 << 12
    host = run_gradient_oracles(problem_type(n), mode, rng=0)
    TRANSFERS.reset()
    device = run_gradient_oracles(problem_type(n, xp=FAKE), mode, rng=0)
    assert [(v.name, v.verdict) for v in device] == [(v.name, v.verdict) for v in host]
    assert TRANSFERS.largest <= CANDIDATES < n, TRANSFERS.arrays
    if problem_type is WrongAxpy:        # the refinements ran, and the failure names entries
        fd = device[0]
        assert fd.verdict == "fail" and fd.metrics["refinement"] == "richardson and large-step both failed"
        assert fd.worst
        assert len(TRANSFERS.arrays) > 0 or mode == "reverse"     # forward names entries; reverse, directions


def _case_file(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "axpy-device.yaml"
    path.write_text(
        f"id: axpy-device\ntitle: axpy on device arrays\nkernel: kernels/elementwise.py:axpy\n"
        f"launch: {{threads: {n}, block: 64}}\nargs:\n"
        f"  out: {{array: {{shape: [{n}], dtype: float32, init: zeros}}, activity: duplicated}}\n"
        f"  a: {{scalar: {{value: 1.5, dtype: float32}}, activity: active}}\n"
        f"  x: {{array: {{shape: [{n}], dtype: float32, init: normal}}, activity: duplicated}}\n"
        f"  y: {{array: {{shape: [{n}], dtype: float32, init: normal}}, activity: duplicated_no_need}}\n"
        "check: {repeat: 2}\n"
        "modes: [primal, forward, reverse]\n")
    return path


def _fake_runs(tmp_path: Path, n: int):
    """(plain simulator runner, runner on the fake device, the axpy case's runs) at n elements."""
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    plain, fake = Runner(ROOT, "sim"), Runner(ROOT, "sim")
    fake.backend = FakeDeviceBackend(fake.backend)
    runs = [run for case in load_case_file(_case_file(tmp_path, n), ROOT) for run in expand_runs(case, "sim")]
    return plain, fake, runs


def test_a_case_runs_on_device_arrays_with_no_host_round_trip(launching_backend, tmp_path, monkeypatch):
    """Through the runner (every oracle, the primal reference, the activity relations and the
    nondeterminism oracle), a problem above policy.HOST_STATE_LIMIT: the same states as on numpy,
    and nothing state-sized reaches the host."""
    if launching_backend.name != "sim":
        pytest.skip("the fake device wraps the simulator")
    from harness import policy
    n = 128
    monkeypatch.setattr(policy, "HOST_STATE_LIMIT", n - 1)         # 3 arrays of n: a large problem
    plain, fake, runs = _fake_runs(tmp_path, n)
    for run in runs:
        expected = plain.execute(run)
        TRANSFERS.reset()
        got = fake.execute(run)
        assert got.error is None, got.error.traceback
        assert got.state == expected.state == "PASS", got.message
        assert [(v.name, v.verdict) for v in got.oracles] == [(v.name, v.verdict) for v in expected.oracles]
        assert {"rel-noneed", "rel-batch", "rel-active", "nondet"} <= {v.name for v in got.oracles} \
            or run.mode == "primal"
        assert TRANSFERS.largest <= CANDIDATES < n, (run.name, TRANSFERS.arrays)
        # each host array crosses once per adapter, however many launches the checks make
        # (out, x and y; a primal run also launches numba's own twin on fresh copies)
        uploads = sum(size >= n for size in TRANSFERS.uploads)
        assert uploads == (6 if run.mode == "primal" else 3), (run.name, TRANSFERS.uploads)


def test_a_small_case_checks_on_the_host_and_only_launches_on_the_device(launching_backend, tmp_path):
    """At or below policy.HOST_STATE_LIMIT the oracles, relations and the primal reference compute
    in numpy: the device sees each launch's arrays copied in and out and the engine's own per-launch
    work, nothing else.
    The same verdicts as the simulator's, and far fewer device operations than the device path."""
    if launching_backend.name != "sim":
        pytest.skip("the fake device wraps the simulator")
    from harness import policy
    from harness.problems.kernel import KernelProblem
    n = 128
    assert 3 * n <= policy.HOST_STATE_LIMIT
    plain, fake, runs = _fake_runs(tmp_path, n)
    problems = []
    original = KernelProblem.__init__

    def remember(self, *args, **kwargs):
        original(self, *args, **kwargs)
        problems.append(self)
    for run in runs:
        problems.clear()
        expected = plain.execute(run)
        TRANSFERS.reset()
        fake.backend.launches = 0
        try:
            KernelProblem.__init__ = remember
            got = fake.execute(run)
        finally:
            KernelProblem.__init__ = original
        assert got.error is None, got.error.traceback
        assert [(v.name, v.verdict, v.message) for v in got.oracles] == \
            [(v.name, v.verdict, v.message) for v in expected.oracles]
        if run.mode == "primal":         # the engine's launch and numba's twin, staged; compared in numpy
            assert TRANSFERS.device_ops == 0 and fake.backend.launches == 2, TRANSFERS.device_ops
            continue
        assert problems and all(p.on_host and p.xp is np for p in problems)
        # on the device: each launch's arrays copied in and out, and the engine zeroing the Active
        # scalar's adjoint buffer; not the oracles' arithmetic (about 1,000 device operations for
        # these 15 launches when the states stay on the device)
        launches = fake.backend.launches
        assert launches > 10 and TRANSFERS.device_ops <= launches, (launches, TRANSFERS.device_ops)
        assert sum(TRANSFERS.uploads) >= n * launches         # every launch copies its arrays in


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("problem_type", [HostAxpy, WrongAxpy])
def test_oracle_memory_is_a_few_states_whatever_the_refinement(mode, problem_type):
    """Peak memory of one oracle run, in units of the state (three float64 arrays of n): the
    directions, cotangents, AD results and the first directions' central estimates, plus one
    probe and one comparison at a time. Before the estimates were freed once compared, a failing
    forward run peaked at 71 states (the refinements' estimates all kept) and a passing one at 31."""
    n = 1 << 15
    problem = problem_type(n)
    tracemalloc.start()
    try:
        verdicts = run_gradient_oracles(problem, mode, rng=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert verdicts[0].verdict == ("pass" if problem_type is HostAxpy else "fail")
    states = peak / (3 * n * 8)
    assert states <= (16 if problem_type is HostAxpy else 28), states


def test_oracle_scaling_times_a_case_through_the_runner(launching_backend):
    """`harness bench --oracle-scaling` (on the GPU) measures the path users take: here on the
    simulator at 2^6, every split present and the kernel launches counted."""
    from harness.bench.run import chart, oracle_scaling
    rows = oracle_scaling(ROOT, [6], launching_backend.name)
    assert [(r["run"], r["state"]) for r in rows] == [("forward", "PASS"), ("reverse", "PASS")]
    for row in rows:
        assert {"setup_s", "oracles_s", "relations_s"} <= set(row["timings"])
        assert row["launches"] > 4 and 0 < row["launch_s"] < row["seconds"]
    names = [entry["name"] for entry in chart({"oracle_scaling": rows})]
    assert any(name.endswith("forward, oracles") for name in names)
    assert any("kernel launches" in name for name in names)


def test_a_comparison_in_pieces_reports_what_one_comparison_reports():
    """compare_in_pieces (bounded temporaries) against compare_vectors (one pass): the same metrics,
    the same worst entries and the same first worst entry, with blocks and ties across pieces."""
    from harness.oracles.names import array_entry_names, Names
    from harness.oracles.tolerance import Comparisons, Tolerance, compare_in_pieces, compare_vectors
    rng = np.random.default_rng(3)
    ref = rng.standard_normal(200)
    ad = ref + 1e-7 * rng.standard_normal(200)
    ad[[5, 17, 18, 150]] += [1.0, -2.0, 2.0, 1.0]          # a tie (17, 18) and two equal errors
    ad[60] = np.nan
    names = Names.concat([array_entry_names("a", (120,)), array_entry_names("b", (80,))])
    tol = Tolerance(1e-3, 1e-6)
    whole = compare_vectors(ad, ref, tol, names, blocks=[(0, 120), (120, 200)], label="d")
    pieces = Comparisons()
    for start, stop in [(0, 120), (120, 200)]:
        compare_in_pieces(ad[start:stop], ref[start:stop], tol, names.window(start, stop - start), label="d",
                          into=pieces, piece=7)
    assert pieces.metrics() == pytest.approx(whole.metrics(), nan_ok=True)
    for only_bad in (False, True):
        assert list(map(repr, pieces.worst(only_bad=only_bad))) == list(map(repr, whole.worst(only_bad=only_bad)))
    assert pieces.top.name == whole.names[whole.worst_index()] == "a[60]"         # the NaN entry


@pytest.mark.parametrize("case_file", ["alias-buffer-twice", "layout-offset", "layout-strided", "layout-transposed",
                                       "layout-shadow-order", "layout-broadcast"])
def test_staged_launches_keep_layouts_and_shared_buffers(launching_backend, case_file):
    """A small problem's launches copy each host allocation to the device once and back: offsets,
    strides, transposes, broadcast views and arguments sharing one buffer come out as the simulator
    has them on numpy (every run's state, verdicts and messages)."""
    if launching_backend.name != "sim":
        pytest.skip("the fake device wraps the simulator")
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    plain, fake = Runner(ROOT, "sim"), Runner(ROOT, "sim")
    fake.backend = FakeDeviceBackend(fake.backend)
    for case in load_case_file(ROOT / "cases" / f"{case_file}.yaml", ROOT):
        if case_file == "layout-shadow-order" and case.variant != "fortran-primal-c-shadow":
            continue                     # Fortran-ordered allocations; the 64 x 48 base takes a minute here
        for run in expand_runs(case, "sim"):
            expected, got = plain.execute(run), fake.execute(run)
            assert (got.state, got.message) == (expected.state, expected.message), run.name
            assert [(v.name, v.verdict, v.message) for v in got.oracles] == \
                [(v.name, v.verdict, v.message) for v in expected.oracles], run.name


def test_where_states_live_is_decided_by_size_on_a_device_only(monkeypatch):
    from harness import policy
    from harness.problems.host_staging import keeps_on_host, total_elements
    small, shared = np.zeros(8), np.zeros(100)
    assert total_elements([small, shared[:10], shared[10:]]) == 108      # allocations, each once
    assert keeps_on_host(FAKE, [small]) and not keeps_on_host(np, [small])
    assert not keeps_on_host(FAKE, [np.zeros(policy.HOST_STATE_LIMIT + 1)])
    monkeypatch.setenv("HARNESS_HOST_STATE_LIMIT", "0")                  # every state on the device
    assert not keeps_on_host(FAKE, [small])
    monkeypatch.setenv("HARNESS_HOST_STATE_LIMIT", "many")
    with pytest.raises(ValueError, match="HARNESS_HOST_STATE_LIMIT"):
        keeps_on_host(FAKE, [small])
