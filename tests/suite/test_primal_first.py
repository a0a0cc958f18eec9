"""A derivative run checks the engine's primal against numba's own launch of the kernel first
(harness/checks/primal_reference.py: primal_first_verdict): when a translation computes another primal,
the run says that the primal differs from numba's and judges no derivative, instead of letting the
finite differences of the wrong primal blame a right derivative."""
from __future__ import annotations

from pathlib import Path

import pytest

KERNEL = '''\
from numba import cuda


def cube(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * x[i] * x[i]
'''

CASE = """\
id: primal-first
kernel: kernels/k.py:cube
launch: {threads: 8, block: 8}
args:
  out: {array: {shape: [8], dtype: float64}, activity: duplicated}
  x: {array: {shape: [8], dtype: float64, init: normal}, activity: duplicated}
modes: [forward, reverse]
"""


class PrimalFault:
    """The bundled engine, except that its primal launches leave `out` scaled by 1.5: a planted
    translation fault in the primal only (the derivative kernels stay those of the kernel)."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def launch(self, kernel, config, *args, mode: str = "primal"):
        result = self.inner.launch(kernel, config, *args, mode=mode)
        if mode == "primal":
            out = args[0]
            out[:] = out[:] * 1.5
        return result


class PrimalFaultAndRefusal(PrimalFault):
    """The planted primal fault, and an engine that refuses the kernel's derivative."""

    def launch(self, kernel, config, *args, mode: str = "primal"):
        if mode != "primal":
            from harness.core.errors import UnsupportedError
            raise UnsupportedError("planted refusal of the derivative")
        return super().launch(kernel, config, *args, mode=mode)


def _outcomes(tmp_path: Path, plant, backend, case: str = CASE) -> dict:
    if backend.name != "sim":
        pytest.skip("the planted fault scales host arrays: the simulator's")
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNEL)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "primal-first.yaml").write_text(case)
    [case] = load_case_file(tmp_path / "cases" / "primal-first.yaml", tmp_path)
    runner = Runner(tmp_path, "sim")
    if plant:
        bundled = runner.engine
        fault = PrimalFault if plant is True else plant
        runner.engine = lambda options, name="bundled": fault(bundled(options, name))
    return {run.mode: runner.execute(run) for run in expand_runs(case, "sim")}


def test_a_primal_that_differs_from_numbas_is_named_first_and_no_derivative_is_blamed(tmp_path, launching_backend):
    from harness.report.explain import explain_outcome
    from harness.checks.primal_reference import PRIMAL_DIFFERS
    outcomes = _outcomes(tmp_path, plant=True, backend=launching_backend)
    assert set(outcomes) == {"forward", "reverse"}
    for mode, o in outcomes.items():
        assert o.state == "FAIL", (mode, o.state, o.message)
        assert o.message.startswith(f"primal-reference: {PRIMAL_DIFFERS}"), o.message
        assert "out[" in o.message and "engine" in o.message and "reference" in o.message
        assert [v.name for v in o.oracles] == ["primal-reference"]      # no derivative oracle judged it
        text = explain_outcome(o)
        assert PRIMAL_DIFFERS in text and "suspect" not in text and "fd-" not in text


def test_the_same_kernel_without_the_fault_passes_with_the_primal_checked_first(tmp_path, launching_backend):
    outcomes = _outcomes(tmp_path, plant=False, backend=launching_backend)
    for mode, o in outcomes.items():
        assert o.state == "PASS", (mode, o.message)
        first = o.oracles[0]
        assert (first.name, first.verdict) == ("primal-reference", "pass"), first
        assert any(v.name.startswith("fd-") and v.verdict == "pass" for v in o.oracles)


def test_an_expected_refusal_is_not_hidden_by_a_primal_that_differs(tmp_path, launching_backend):
    """A racy kernel's primal differs from numba's own launch on a GPU, and the case expects the
    engine to refuse its derivative: the refusal still decides the run."""
    expecting = CASE + 'expect: {unsupported: {match: "planted refusal"}}\n'
    outcomes = _outcomes(tmp_path, PrimalFaultAndRefusal, launching_backend, expecting)
    for mode, o in outcomes.items():
        assert o.state == "UNSUPPORTED" and o.message.startswith("refused as expected"), (mode, o.state, o.message)
