"""The zero guard per argument (harness/oracles/checks.py `_zero_per_argument`) on numpy problems:
a derivative that is silently zero for one argument is ZERO even when the rest of the state's
gradient (an unwritten input's identity pass-through, another argument's correct derivative) is
not zero."""
from __future__ import annotations

import numpy as np
import pytest

from harness.oracles import StateVar, flatten, run_gradient_oracles, unflatten
from harness.oracles.checks import ZERO_ARG_MESSAGE, ZERO_MESSAGE

N = 6


class Problem:
    """F(out, x, y) = (out := exp(x) + y * scale, x, y), with the exp term's derivative optionally
    dropped (`zero_exp`), and an optional noisy primal (a nondeterministic kernel)."""

    def __init__(self, *, zero_exp=False, accumulate=False, noise=0.0, dtype="float64"):
        rng = np.random.default_rng(0)
        self.s0 = {"out": rng.uniform(-1, 1, N), "x": rng.uniform(-1, 1, N), "y": rng.uniform(-1, 1, N)}
        self.inputs = [StateVar(k, (N,)) for k in self.s0]
        self.outputs = list(self.inputs)
        self.dtype, self.zero_exp, self.accumulate, self.noise = dtype, zero_exp, accumulate, noise
        self.noise_rng = np.random.default_rng(1)

    def F(self, s):
        base = s["out"] if self.accumulate else 0.0
        out = base + np.exp(s["x"]) + 0.5 * s["y"]
        if self.noise:
            out = out + self.noise * self.noise_rng.standard_normal(N)
        return {"out": out, "x": s["x"], "y": s["y"]}

    def J(self):
        n3 = 3 * N
        J = np.zeros((n3, n3))
        o, x, y = slice(0, N), slice(N, 2 * N), slice(2 * N, n3)
        if self.accumulate:
            J[o, o] = np.eye(N)
        if not self.zero_exp:
            J[o, x] = np.diag(np.exp(self.s0["x"]))
        J[o, y] = 0.5 * np.eye(N)
        J[x, x] = np.eye(N)
        J[y, y] = np.eye(N)
        return J

    def base_point(self):
        return {k: v.copy() for k, v in self.s0.items()}

    def primal64(self, state):
        return self.F(state)

    def jvp(self, v):
        return unflatten(self.outputs, self.J() @ flatten(self.inputs, v))

    def vjp(self, w):
        return unflatten(self.inputs, self.J().T @ flatten(self.outputs, w))


def _zero(problem, mode):
    verdicts = {v.name: v for v in run_gradient_oracles(problem, mode, rng=0, dot=False)}
    return verdicts["zero"], verdicts[f"fd-{mode}"]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("accumulate", [False, True])
def test_a_silently_zero_argument_is_zero(mode, accumulate):
    """out = exp(x) + y/2 (or out += ...): with exp' dropped, d out/d x is zero, while x's identity
    pass-through (and out's, when accumulating) and d out/d y keep the whole gradient nonzero."""
    zero, fd = _zero(Problem(zero_exp=True, accumulate=accumulate), mode)
    assert fd.verdict == "fail"
    assert zero.verdict == "fail", zero.message
    assert zero.message.startswith(f"{ZERO_ARG_MESSAGE} x where finite differences are not"), zero.message
    assert zero.metrics["zero_arguments"] == ["x"]
    assert zero.metrics["per_argument"]["x"]["kind"] == "pass-through"
    # the full-Jacobian localization's evidence for x is quoted
    assert "worst entry out[" in zero.message and "/ x[" in zero.message and "AD 0 vs FD" in zero.message


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_correct_gradient_passes(mode):
    zero, fd = _zero(Problem(), mode)
    assert fd.verdict == "pass" and zero.verdict == "pass"
    assert zero.message == "gradient is neither all zero nor NaN/Inf"


def test_the_whole_state_message_is_kept_for_an_all_zero_gradient():
    p = Problem(zero_exp=True)
    p.J = lambda: np.zeros((3 * N, 3 * N))
    zero, _ = _zero(p, "forward")
    assert zero.verdict == "fail" and zero.message.startswith(ZERO_MESSAGE)


def test_a_wrong_but_nonzero_gradient_is_a_plain_failure():
    p = Problem()
    good = p.J

    def doubled():
        J = good()
        J[0:N, N:2 * N] *= 2
        return J
    p.J = doubled
    zero, fd = _zero(p, "reverse")
    assert fd.verdict == "fail" and zero.verdict == "pass"


def test_no_zero_diagnosis_when_finite_differences_are_noise():
    """A nondeterministic primal makes FD change with the step size: the per-argument guard stays
    silent rather than blame a zero it cannot confirm (the nondet oracle is the one to judge)."""
    zero, fd = _zero(Problem(zero_exp=True, noise=1e-7), "reverse")
    assert fd.verdict == "fail" and fd.metrics["fd_spread_ratio"] >= 1
    assert zero.verdict == "pass", zero.message
