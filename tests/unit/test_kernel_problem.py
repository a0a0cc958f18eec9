"""KernelProblem is a pure adapter: a derivative launch returns its results as a
DerivativeLaunch and leaves the adapter as it was; the primal-state and batch-lane errors are
folded in by the run's LaunchLog, which catches an engine that disturbs them."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from harness.core.activity import BatchDuplicated, Duplicated

from tests.unit.test_relations import BrokenEngine, _axpy_problem


def _state(problem) -> dict:
    """Everything the adapter holds, compared by value (arrays by content)."""
    return {k: copy.deepcopy(v) for k, v in vars(problem).items() if k not in ("engine", "backend", "_arrays", "kernel", "args", "xp")}


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_derivative_launch_leaves_the_adapter_unchanged(engine, launching_backend, host_args, mode):
    problem = _axpy_problem(engine, host_args)
    before = _state(problem)
    seed_vars = problem.inputs if mode == "forward" else problem.outputs
    seed = {v.name: np.ones(v.shape) for v in seed_vars}
    got = problem.derivative(mode, seed)
    assert _state(problem).keys() == before.keys()
    assert repr(_state(problem)) == repr(before)
    assert got.mode == mode and got.launch is not None and got.launch.plan.mode == mode
    assert got.primal_finals.keys() == {"out", "x", "y"}
    for name, value in problem.primal_finals().items():      # an axpy leaves the primal as a primal launch
        np.testing.assert_array_equal(got.primal_finals[name], value)
    again = problem.jvp(seed) if mode == "forward" else problem.vjp(seed)
    for name in got.result:
        np.testing.assert_array_equal(again[name], got.result[name])


def _primal_disturbed(args, mode, result):
    first = next(a for a in args if isinstance(a, Duplicated))
    first.value[...] += 1.0                      # the derivative launch leaves a wrong primal value


def _second_lane_off(args, mode, result):
    for a in args:
        if isinstance(a, BatchDuplicated):
            a.shadows[1][...] *= 1.5


def test_the_launch_log_measures_the_primal_state(engine, launching_backend, host_args):
    from harness.problems.launch_log import LaunchLog
    from harness.oracles import run_gradient_oracles
    good = LaunchLog(_axpy_problem(engine, host_args))
    run_gradient_oracles(good, "forward", rng=1, dot=False)
    assert good.primal_state_error == 0.0 and set(good.latest) == {"forward"} and good.history
    bad = LaunchLog(_axpy_problem(BrokenEngine(engine, _primal_disturbed), host_args))
    run_gradient_oracles(bad, "forward", rng=1, dot=False)
    assert bad.primal_state_error > 0.1


def test_the_launch_log_measures_batch_lanes(engine, launching_backend, host_args):
    from harness.problems.launch_log import LaunchLog
    good = LaunchLog(_axpy_problem(engine, host_args, x="batch_duplicated", y="batch_duplicated", out="batch_duplicated", width=3))
    good.jvp({"x": np.ones(16), "y": np.ones(16), "a": np.float64(0.5)})
    assert good.lane_error <= 1e-12
    bad = LaunchLog(_axpy_problem(BrokenEngine(engine, _second_lane_off), host_args,
                                  x="batch_duplicated", y="batch_duplicated", out="batch_duplicated", width=3))
    bad.jvp({"x": np.ones(16), "y": np.ones(16), "a": np.float64(0.5)})
    assert bad.lane_error == pytest.approx(0.5)
