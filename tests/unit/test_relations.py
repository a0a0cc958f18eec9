"""Activity relations (rel-const, rel-noneed, rel-batch, rel-active) and `check: {activities: all}`:
each relation holds on the real engine, and fails, naming itself and the worst entry, when a
deliberately broken engine (a wrapper that corrupts one activity's results) is put in its way."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from harness.core.activity import BatchDuplicated, Const, DuplicatedNoNeed
from harness.engine.rules import table as rules
from harness.cases.inputs import HostArg
from harness.model import ArgSpec, ArraySpec
from harness.checks.relations import (
    MAX_COMBINATIONS, activity_choices, activity_combinations, buffered_kernel, relation_verdicts,
)

ROOT = Path(__file__).resolve().parents[2]


class BrokenEngine:
    """The real engine, with `bug(args, mode, result)` applied to every derivative launch."""

    def __init__(self, engine, bug):
        self.engine, self.bug, self.backend = engine, bug, engine.backend

    def launch(self, kernel, config, *args, mode="primal"):
        result = self.engine.launch(kernel, config, *args, mode=mode)
        if mode != "primal":
            self.bug(args, mode, result)
        return result

    def prepare(self, *a, **k):
        return self.engine.prepare(*a, **k)


def _axpy_problem(engine, host_args, *, a="active", x="duplicated", y="duplicated", out="duplicated", width=None):
    from harness.engine.runtime.launch import LaunchConfig
    from harness.cases.inputs import load_kernel
    from harness.problems.kernel import KernelProblem
    rng = np.random.default_rng(3)
    args = host_args(("out", np.zeros(16), out), ("a", np.float64(1.5), a),
                     ("x", rng.standard_normal(16), x), ("y", rng.standard_normal(16), y))
    if width:
        args = [HostArg(replace(h.spec, activity="batch_duplicated", width=width), h.value)
                if h.spec.activity == "batch_duplicated" else h for h in args]
    kernel = load_kernel("kernels/elementwise.py:axpy", ROOT)
    return KernelProblem(engine, kernel, LaunchConfig.threads(16, 8), args)


def _by_name(verdicts):
    return {v.name: v for v in verdicts}


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_relations_hold_on_the_engine(engine, launching_backend, host_args, mode):
    problem = _axpy_problem(engine, host_args, y="const")
    verdicts = _by_name(relation_verdicts(problem, mode, rng=0))
    assert set(verdicts) == {"rel-const", "rel-noneed", "rel-batch", "rel-active"}
    for v in verdicts.values():
        assert v.verdict == "pass", v.message
        assert v.metrics["max_rel_diff"] <= v.metrics["rtol"]
    assert verdicts["rel-const"].metrics["arguments"] == ["y"]
    assert "Const(y) vs Duplicated(y, zero shadow)" in verdicts["rel-const"].message


def test_batch_case_compares_lanes_with_separate_launches(engine, launching_backend, host_args):
    problem = _axpy_problem(engine, host_args, a="const", x="batch_duplicated", y="batch_duplicated",
                            out="batch_duplicated", width=3)
    verdicts = _by_name(relation_verdicts(problem, "reverse", rng=0))
    assert verdicts["rel-batch"].verdict == "pass" and verdicts["rel-batch"].metrics["width"] == 3
    assert "width 3 vs 3 Duplicated launches, distinct directions" in verdicts["rel-batch"].message
    # a const scalar becomes Active, batched like the rest
    assert verdicts["rel-const"].verdict == "pass", verdicts["rel-const"].message


def test_relations_reuse_the_oracles_first_launches(engine, launching_backend, host_args):
    """With the gradient oracles' results in a LaunchLog's history, the reference costs nothing."""
    from harness.problems.launch_log import LaunchLog
    from harness.oracles import run_gradient_oracles
    problem = _axpy_problem(engine, host_args)
    log = LaunchLog(problem)
    run_gradient_oracles(log, "forward", rng=1, dot=False)
    calls = []
    real = problem.engine.launch
    problem.engine = type("Counting", (), {"backend": engine.backend, "prepare": engine.prepare,
                                            "launch": lambda s, *a, **k: calls.append(k.get("mode")) or real(*a, **k)})()
    verdicts = relation_verdicts(problem, "forward", rng=0, known=log.history)
    assert all(v.verdict == "pass" for v in verdicts), [v.message for v in verdicts]
    # noneed, batch, active: one launch each; both references came from the history
    assert calls.count("forward") == 3, calls


# ----------------------------------------------------------------------------- broken engines

def _noneed_doubles(args, mode, result):
    for a in args:
        if isinstance(a, DuplicatedNoNeed):
            a.shadow[...] *= 2


def _active_doubles(args, mode, result):
    if mode == "reverse":                # an Active scalar's reduced adjoint comes back doubled
        result.adjoints = {k: 2 * v for k, v in result.adjoints.items()}


def _lanes_mixed(args, mode, result):
    for a in args:
        if isinstance(a, BatchDuplicated):
            a.shadows[1][...] = a.shadows[0]


def _const_leaks(args, mode, result):
    if any(isinstance(a, Const) and np.ndim(a.value) > 0 and a.value.dtype.kind == "f" for a in args):
        for a in args:
            for s in getattr(a, "shadows", None) or ((a.shadow,) if hasattr(a, "shadow") else ()):
                s[...] *= 1.5


@pytest.mark.parametrize("bug, failing, kwargs", [
    (_noneed_doubles, "rel-noneed", {}),
    (_lanes_mixed, "rel-batch", {}),
    (_const_leaks, "rel-const", {"y": "const"}),
])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_broken_activity_fails_its_relation(engine, launching_backend, host_args, bug, failing, kwargs, mode):
    problem = _axpy_problem(BrokenEngine(engine, bug), host_args, **kwargs)
    verdicts = _by_name(relation_verdicts(problem, mode, rng=0))
    bad = {n for n, v in verdicts.items() if v.verdict == "fail"}
    assert failing in bad, {n: v.message for n, v in verdicts.items()}
    v = verdicts[failing]
    assert "relative (>" in v.message and "worst" in v.message and v.worst, v.message
    assert v.worst[0].abs_err > 0


def test_a_wrong_active_adjoint_fails_rel_active(engine, launching_backend, host_args):
    problem = _axpy_problem(BrokenEngine(engine, _active_doubles), host_args)
    verdicts = _by_name(relation_verdicts(problem, "reverse", rng=0))
    assert verdicts["rel-active"].verdict == "fail", verdicts["rel-active"].message
    assert verdicts["rel-active"].worst[0].index == "a"
    assert verdicts["rel-noneed"].verdict == "pass"


def test_refused_variant_is_a_skip_that_says_why(engine, launching_backend, host_args):
    """A const alias cannot be made Duplicated: rel-const is skipped, with the ActivityError."""
    from harness.engine.runtime.launch import LaunchConfig
    from harness.cases.inputs import load_kernel
    from harness.problems.kernel import KernelProblem
    x = np.random.default_rng(0).standard_normal(8)
    specs = [ArgSpec("out", "array", "duplicated", array=ArraySpec((8,), "float64")),
             ArgSpec("x", "array", "const", array=ArraySpec((8,), "float64")),
             ArgSpec("y", "array", "const", array=ArraySpec((8,), "float64")),
             ArgSpec("z", "array", "duplicated", array=ArraySpec((8,), "float64"))]
    args = [HostArg(specs[0], np.zeros(8)), HostArg(specs[1], x), HostArg(specs[2], x), HostArg(specs[3], x.copy())]
    problem = KernelProblem(engine, load_kernel("kernels/layouts.py:triple_product", ROOT), LaunchConfig.threads(8), args)
    verdicts = _by_name(relation_verdicts(problem, "forward", rng=0))
    assert verdicts["rel-const"].verdict == "skip"
    assert "refused: ActivityError" in verdicts["rel-const"].message and "share memory" in verdicts["rel-const"].message


# ----------------------------------------------------------------------------- rewriting a kernel

def test_buffered_kernel_reads_the_scalar_from_a_buffer(backend):
    from harness.cases.inputs import load_kernel
    fn = buffered_kernel(load_kernel("kernels/elementwise.py:axpy", ROOT), ["a"])
    import inspect
    source = Path(inspect.getsourcefile(fn)).read_text()
    assert "def axpy__scalar_buffers(out, a_buf, x, y):\n    a = a_buf[0]\n" in source
    assert "def math_heavy(" in source            # the kernel's whole module comes along


# ----------------------------------------------------------------------------- activities: all

def _arg(name, value, activity="const", **kw):
    if isinstance(value, np.ndarray):
        return HostArg(ArgSpec(name, "array", activity, array=ArraySpec(value.shape, str(value.dtype)), **kw), value)
    return HostArg(ArgSpec(name, "scalar", activity, value=value.item(), dtype=str(value.dtype)), value)


def test_activity_choices_and_combinations():
    x = np.zeros(4)
    args = [_arg("x", x), _arg("idx", np.zeros(4, np.int32)), _arg("a", np.float32(1)), _arg("n", np.int64(3)),
            _arg("y", x, alias="x"), _arg("b", np.broadcast_to(np.zeros(1), (4,)))]
    assert [activity_choices(a) for a in args] == [
        ("const", "duplicated", "duplicated_no_need"), ("const",), ("const", "active"), ("const",), ("const",),
        ("const",)]
    combos, total = activity_combinations(args)
    assert total == 3 * 2 - 1 == len(combos)
    assert {"x": "const", "idx": "const", "a": "active", "n": "const", "y": "const", "b": "const"} in combos
    assert all(any(v != "const" for v in c.values()) for c in combos)
    many = [_arg(f"x{i}", x) for i in range(5)]                # 3^5 - 1 = 242 > 64
    combos, total = activity_combinations(many)
    assert total == 242 and len(combos) == MAX_COMBINATIONS


def _case_runs(case_file: str, backend_name: str):
    from harness.cases import expand_runs, load_case_file
    return [r for c in load_case_file(ROOT / case_file, ROOT) for r in expand_runs(c, backend_name)]


def test_activities_all_case(launching_backend):
    from harness.execution.runner import Runner
    runner = Runner(ROOT, launching_backend.name)
    for run in _case_runs("cases/activities-all.yaml", launching_backend.name):
        outcome = runner.execute(run)
        assert outcome.state == "PASS", outcome.message
        v = next(o for o in outcome.oracles if o.name == "activities")
        assert (v.metrics["total"], v.metrics["checked"], v.metrics["truncated"]) == (17, 17, False)
        assert v.metrics["pass"] + v.metrics["refused"] == 17
        # y const while the kernel stores a differentiable value into it: the engine refuses it
        refused = [r["activities"] for r in v.metrics["combinations"] if r["result"] == "refused"]
        assert refused and all(a["y"] == "const" for a in refused)
        assert f"all 17 activity combinations in {run.mode} mode" in v.message


def test_activities_all_names_the_failing_combinations(launching_backend, monkeypatch):
    """A wrong sin rule breaks every combination that differentiates through sin(x), and only those."""
    from harness.execution.runner import Runner
    monkeypatch.setitem(rules.PARTIALS, "sin", ("-cos(x)",))
    runner = Runner(ROOT, launching_backend.name)
    run = next(r for r in _case_runs("cases/activities-all.yaml", launching_backend.name) if r.mode == "reverse")
    outcome = runner.execute(run)
    assert outcome.state == "FAIL"
    v = next(o for o in outcome.oracles if o.name == "activities")
    assert v.verdict == "fail" and "x=dup" in v.message
    for row in v.metrics["combinations"]:
        differentiates_sin = row["activities"]["x"] != "const" and row["activities"]["y"] != "const"
        expected = {"fail"} if differentiates_sin else {"pass", "refused"}
        assert row["result"] in expected, row
