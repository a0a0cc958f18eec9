"""The nondeterminism oracle (repeat, block sweep), the NONDET state and `xfail: {state: ...}`."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.core.activity import BatchDuplicated, Duplicated
from harness.model import Expectation, OracleVerdict
from harness.checks.nondet import NONDET_RTOL, nondet_verdict
from harness.execution.verdicts import judge, observed_state

ROOT = Path(__file__).resolve().parents[2]


class NoisyEngine:
    """The real engine, with relative noise of size `eps` added to every derivative result."""

    def __init__(self, engine, eps):
        self.engine, self.eps, self.backend = engine, eps, engine.backend
        self.rng = np.random.default_rng(0)

    def launch(self, kernel, config, *args, mode="primal"):
        result = self.engine.launch(kernel, config, *args, mode=mode)
        if mode != "primal":
            for a in args:
                shadows = a.shadows if isinstance(a, BatchDuplicated) else (a.shadow,) if isinstance(a, Duplicated) else ()
                for s in shadows:
                    s[...] *= self.backend.asarray(1 + self.eps * self.rng.standard_normal(s.shape))
        return result


def _problem(engine, host_args, threads=16, block=8, dtype=np.float64):
    from harness.engine.runtime.launch import LaunchConfig
    from harness.cases.inputs import load_kernel
    from harness.problems.kernel import KernelProblem
    rng = np.random.default_rng(1)
    args = host_args(("out", np.zeros(threads, dtype), "duplicated"), ("a", dtype(1.5), "active"),
                     ("x", rng.standard_normal(threads).astype(dtype), "duplicated"),
                     ("y", rng.standard_normal(threads).astype(dtype), "duplicated"))
    kernel = load_kernel("kernels/elementwise.py:axpy", ROOT)
    return KernelProblem(engine, kernel, LaunchConfig.threads(threads, block), args)


def test_nothing_asked_nothing_run(engine, launching_backend, host_args):
    assert nondet_verdict(_problem(engine, host_args), "reverse") is None


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_deterministic_kernel_passes_bitwise(engine, launching_backend, host_args, mode):
    from harness.cases import load_case_file
    case = load_case_file(ROOT / "cases/axpy.yaml", ROOT)[0]       # a threads: launch
    problem = _problem(engine, host_args, threads=64, block=32)
    v = nondet_verdict(problem, mode, repeat=3, block_sweep=(16, 32, 64), case=case, engine=engine,
                       args=problem.args, rng=0)
    assert v.verdict == "pass", v.message
    assert f"3 identical {mode} launches agree bitwise" in v.message
    assert set(v.metrics["sweep"]) == {"16", "64"}          # 32 is the launch's own block size
    assert v.metrics["repeat_bitwise_differing"] == 0


def test_noise_within_reordering_tolerance_is_reported_not_failed(engine, launching_backend, host_args):
    problem = _problem(NoisyEngine(engine, 1e-14), host_args)
    v = nondet_verdict(problem, "forward", repeat=3, rng=0)
    assert v.verdict == "pass", v.message
    assert "differ bitwise" in v.message and "within reordering tolerance" in v.message
    assert 0 < v.metrics["repeat_rel_spread"] <= NONDET_RTOL["float64"]


def test_noise_beyond_tolerance_is_nondet(engine, launching_backend, host_args):
    problem = _problem(NoisyEngine(engine, 1e-6), host_args)
    v = nondet_verdict(problem, "reverse", repeat=3, rng=0)
    assert v.verdict == "fail" and v.name == "nondet"
    assert "3 identical reverse launches disagree: relative spread" in v.message
    assert "differ bitwise" in v.message and "widest at" in v.message
    assert v.worst and v.worst[0].index.endswith("(repeat)")
    assert observed_state([v], None)[0] == "NONDET"


def test_sweep_needs_a_launch_whose_grid_follows(engine, launching_backend, host_args):
    from harness.cases import load_case_file
    case = load_case_file(ROOT / "cases/shared-block-sum.yaml", ROOT)[0]       # grid: 2, block: 64
    v = nondet_verdict(_problem(engine, host_args), "forward", block_sweep=(32,), case=case, engine=engine, rng=0)
    assert v.verdict == "skip" and "fixes its grid" in v.message


# ----------------------------------------------------------------------------- the cases, end to end

def _outcomes(case_file: str, backend_name: str):
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    runner = Runner(ROOT, backend_name)
    return {f"{c.variant or 'base'}::{r.name}": runner.execute(r)
            for c in load_case_file(ROOT / case_file, ROOT) for r in expand_runs(c, backend_name)}


def test_block_size_dependence_is_nondet(launching_backend):
    for key, o in _outcomes("cases/nondet-block-size.yaml", launching_backend.name).items():
        assert o.state == "XFAIL", f"{key}: {o.state}: {o.message}"
        nondet = next(v for v in o.oracles if v.name == "nondet")
        assert nondet.verdict == "fail"
        assert "the result depends on the block size: block 16 vs 8 differs by" in nondet.message
        assert nondet.metrics["sweep"]["16"] > 0.1
        # at its own block size the kernel is right: the FD check passes
        assert next(v for v in o.oracles if v.name.startswith("fd-")).verdict == "pass"


def test_compaction_order_is_nondet_on_the_simulator(launching_backend):
    if launching_backend.name != "sim":
        pytest.skip("thread arrival order varies between launches on the simulator; a GPU may be deterministic")
    for key, o in _outcomes("cases/nondet-compaction-order.yaml", launching_backend.name).items():
        assert o.state == "XFAIL", f"{key}: {o.state}: {o.message}"
        assert "nondet: 4 identical" in o.message and "relative spread" in o.message


def test_atomic_reductions_are_stable(launching_backend):
    for key, o in _outcomes("cases/nondet-atomics-stable.yaml", launching_backend.name).items():
        assert o.state == "PASS", f"{key}: {o.state}: {o.message}"
        nondet = next(v for v in o.oracles if v.name == "nondet")
        assert nondet.metrics["repeat"] == 3 and set(nondet.metrics["sweep"]) == {"8", "32"}


# ----------------------------------------------------------------------------- states

def _fail(name):
    return OracleVerdict(name, "fail", f"{name} went wrong")


def test_nondet_outranks_zero_and_fail():
    assert observed_state([_fail("fd-reverse"), _fail("zero"), _fail("nondet")], None)[0] == "NONDET"
    assert observed_state([_fail("fd-reverse"), _fail("zero")], None)[0] == "ZERO"
    assert observed_state([_fail("fd-reverse"), _fail("rel-batch")], None)[0] == "FAIL"


def test_xfail_state_pins_the_failing_state():
    expect = Expectation(kind="xfail", reason="a race", state="NONDET")
    assert judge(expect, [_fail("nondet")], None)[0] == "XFAIL"
    state, message = judge(expect, [_fail("fd-forward")], None)
    assert state == "FAIL" and "to show as NONDET, got FAIL" in message
    state, message = judge(expect, [], RuntimeError("boom"))
    assert state == "FAIL" and "got ERROR" in message
    assert judge(expect, [OracleVerdict("nondet", "pass")], None)[0] == "XPASS"
    assert judge(Expectation(kind="xfail", reason="any"), [_fail("fd-forward")], None)[0] == "XFAIL"


def test_xfail_state_in_the_case_format(tmp_path):
    from harness.cases import load_case_file
    from harness.core.errors import CaseError
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text("def k(out):\n    pass\n")
    text = ("id: c\nkernel: kernels/k.py:k\nlaunch: {threads: 4}\n"
            "args:\n  out: {array: {shape: [4], dtype: float64}, activity: duplicated}\n"
            "expect: {xfail: {reason: r, state: %s}}\n")
    (tmp_path / "c.yaml").write_text(text % "NONDET")
    assert load_case_file(tmp_path / "c.yaml", tmp_path)[0].expect.state == "NONDET"
    (tmp_path / "c.yaml").write_text(text % "PASS")
    with pytest.raises(CaseError, match="expect.xfail.state"):
        load_case_file(tmp_path / "c.yaml", tmp_path)
