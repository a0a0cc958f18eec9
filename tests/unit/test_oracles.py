"""The gradient oracles on small numpy problems with known (right or deliberately wrong) derivatives."""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from harness.core.errors import UnsupportedError
from harness.model import OracleVerdict
from harness.oracles import (
    DEFAULT_TOLERANCES, NONFINITE_MESSAGE, ZERO_MESSAGE, StateVar, Tolerance, check_dot, check_forward_fd,
    check_reverse_fd, check_zero, compare_vectors, dot_scale, dot_tolerance, entry_names, fd_jvp,
    fd_jvp_large_step, fd_jvp_richardson, flatten, localize, make_cotangent, make_directions,
    resolve_tolerance, run_gradient_oracles, unflatten,
)

MODES = ("forward", "reverse")


# ----------------------------------------------------------------------------- test problems

def complex_step_jacobian(F, s0: dict) -> np.ndarray:
    """Exact-to-roundoff Jacobian of an analytic numpy F (an independent reference, not FD)."""
    inputs = [StateVar(k, np.shape(v)) for k, v in s0.items()]
    y0 = F({k: np.array(v, dtype=np.float64) for k, v in s0.items()})
    outputs = [StateVar(k, np.shape(v)) for k, v in y0.items()]
    flat0 = flatten(inputs, s0)
    cols = []
    for j in range(flat0.size):
        z = flat0.astype(np.complex128)
        z[j] += 1e-30j
        y = F(unflatten(inputs, z))
        cols.append(np.concatenate([np.imag(np.asarray(y[o.name])).reshape(-1) for o in outputs]) / 1e-30)
    return np.stack(cols, axis=1)


class NumpyProblem:
    """A DiffProblem from a numpy F: dict -> dict. Derivatives come from the dense Jacobian J (given,
    or by complex step), edited by `fwd_edit` / `rev_edit` to plant bugs, or from explicit
    `jvp` / `vjp` callables (problem, dict) -> dict. dtype float32 runs the derivative in float32."""

    def __init__(self, F, s0, *, dtype="float64", jacobian=None, fwd_edit=None, rev_edit=None,
                 jvp=None, vjp=None):
        self.F = F
        self.s0 = {k: np.array(v, dtype=np.float64) for k, v in s0.items()}
        self.inputs = [StateVar(k, np.shape(v)) for k, v in self.s0.items()]
        self.outputs = [StateVar(k, np.shape(v)) for k, v in F(self.base_point()).items()]
        self.dtype = dtype
        J = complex_step_jacobian(F, self.s0) if jacobian is None else np.asarray(jacobian, dtype=np.float64)
        self.J_fwd = fwd_edit(J.copy()) if fwd_edit else J
        self.J_rev = rev_edit(J.copy()) if rev_edit else J
        self._jvp, self._vjp = jvp, vjp
        self.primal_calls = 0

    @property
    def np_dtype(self):
        return np.dtype(self.dtype)

    def base_point(self):
        return {k: v.copy() for k, v in self.s0.items()}

    def primal64(self, state):
        self.primal_calls += 1
        return {k: np.asarray(v, dtype=np.float64) for k, v in self.F(state).items()}

    def jvp(self, tangent):
        if self._jvp:
            return self._jvp(self, tangent)
        dt = self.np_dtype
        return unflatten(self.outputs, self.J_fwd.astype(dt) @ flatten(self.inputs, tangent).astype(dt))

    def vjp(self, cotangent):
        if self._vjp:
            return self._vjp(self, cotangent)
        dt = self.np_dtype
        return unflatten(self.inputs, self.J_rev.T.astype(dt) @ flatten(self.outputs, cotangent).astype(dt))


def mixed_F(s):
    """x maps to itself (read only), y is updated in place, out is overwritten, a is an Active scalar."""
    x, y, a = s["x"], s["y"], s["a"]
    out = np.stack([np.sum(x * x[::-1]) + 0 * s["out"][0], np.prod(y) * a])
    return {"x": x, "y": y * np.sin(x[:3]) + a * x[1:] ** 2, "out": out}


MIXED_S0 = {"x": [0.3, -1.2, 0.7, 2.0], "y": [1.5, -0.4, 0.9], "a": 0.8, "out": [0.0, 0.0]}


def mixed(**kw) -> NumpyProblem:
    return NumpyProblem(mixed_F, MIXED_S0, **kw)


def run(problem, mode, seed=0, **kw) -> dict[str, OracleVerdict]:
    return {v.name: v for v in run_gradient_oracles(problem, mode, rng=np.random.default_rng(seed), **kw)}


def fd_name(mode):
    return "fd-forward" if mode == "forward" else "fd-reverse"


def assert_all_pass(verdicts: dict[str, OracleVerdict]):
    for v in verdicts.values():
        assert v.verdict == "pass", f"{v.name}: {v.message}"


# ----------------------------------------------------------------------------- tolerances

def test_default_and_overridden_tolerances():
    assert resolve_tolerance("float64") == Tolerance(rtol=1e-6, atol=1e-9)
    assert resolve_tolerance("float32") == Tolerance(rtol=2e-3, atol=1e-5)
    assert resolve_tolerance("float32", rtol=1e-2) == Tolerance(rtol=1e-2, atol=1e-5)
    assert resolve_tolerance("float64", atol=0.0) == Tolerance(rtol=1e-6, atol=0.0)
    assert resolve_tolerance(None) == DEFAULT_TOLERANCES["float64"]
    with pytest.raises(ValueError, match="float16"):
        resolve_tolerance("float16")
    with pytest.raises(ValueError):
        resolve_tolerance("float64", rtol=-1.0)


def test_vector_rule_scale_and_failures():
    tol = Tolerance(rtol=1e-3, atol=0.0)
    ref = np.array([100.0, 1e-4, -50.0])
    names = ["v[0]", "v[1]", "v[2]"]
    # An absolute error of 1e-3 on a near-zero entry is fine next to entries of size 100 ...
    assert compare_vectors(ref + np.array([0, 1e-3, 0]), ref, tol, names).ok
    # ... but a zero, a sign flip or a doubling is not, whatever the entry.
    for bad in (np.zeros(3), -ref, 2 * ref):
        comp = compare_vectors(bad, ref, tol, names)
        assert not comp.ok and comp.worst_ratio > 100
    comp = compare_vectors(np.array([100.0, np.nan, -50.0]), ref, tol, names)
    assert not comp.ok and comp.worst()[0].index == "v[1]"
    # Per-argument blocks: a big array does not widen the tolerance of a small one.
    ref2 = np.array([1e6, 1e6, 1.0, 1.0])
    wrong_small = ref2 * np.array([1, 1, 2, 2])
    assert compare_vectors(wrong_small, ref2, tol, list("abcd")).ok
    assert not compare_vectors(wrong_small, ref2, tol, list("abcd"), blocks=[(0, 2), (2, 4)]).ok


def test_worst_entries_sorted_and_capped():
    ref = np.arange(1.0, 21.0)
    ad = ref + np.linspace(0, 1, 20) ** 2
    worst = compare_vectors(ad, ref, Tolerance(1e-6, 0), [f"v[{i}]" for i in range(20)]).worst()
    assert len(worst) == 8
    ratios = [w.abs_err / (1e-6 * (abs(w.fd) + np.sqrt(np.mean(ref ** 2)))) for w in worst]
    assert ratios == sorted(ratios, reverse=True)


def test_dot_rule_passes_float32_roundoff_and_fails_wrong_sums():
    rng = np.random.default_rng(7)
    tol32 = DEFAULT_TOLERANCES["float32"]
    for n in (10, 1000, 100_000):
        for _ in range(5):
            g, v = rng.standard_normal(n) * 3.0, rng.standard_normal(n)
            exact = float(g @ v)
            # Worst-case-ish float32: a sequential running sum, after rounding g to float32.
            seq = float(np.cumsum((g.astype(np.float32) * v.astype(np.float32)), dtype=np.float32)[-1])
            pairwise = float(np.dot(g.astype(np.float32), v.astype(np.float32)))
            # Per-entry float32 error with heavy cancellation: each g_k off by ~1e3 ulps of its size.
            cancel = float((g + rng.uniform(-1, 1, n) * 1e3 * 6e-8 * np.abs(g)) @ v)
            for got in (seq, pairwise, cancel):
                tol = dot_tolerance(got, exact, weight_norm=np.linalg.norm(v), scale=dot_scale(g, v), tol=tol32)
                assert abs(got - exact) <= tol, (n, got, exact, tol)
            for wrong in (-exact, 2 * exact, 0.0):
                tol = dot_tolerance(wrong, exact, weight_norm=np.linalg.norm(v), scale=dot_scale(g, v), tol=tol32)
                if abs(exact) > 0.05 * np.linalg.norm(g):       # not a near-orthogonal draw
                    assert abs(wrong - exact) > tol, (n, wrong, exact, tol)


# ----------------------------------------------------------------------------- directions and FD

def test_directions_and_cotangent_are_seeded():
    p = mixed()
    d1 = make_directions(p, 3, np.random.default_rng(5))
    d2 = make_directions(p, 3, np.random.default_rng(5))
    assert len(d1) == 3
    for a, b in zip(d1, d2):
        assert a.keys() == {"x", "y", "a", "out"}
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
            assert a[k].shape == dict((v.name, v.shape) for v in p.inputs)[k]
    w = make_cotangent(p, np.random.default_rng(5))
    assert {k: v.shape for k, v in w.items()} == {"x": (4,), "y": (3,), "out": (2,)}
    assert not np.array_equal(d1[0]["x"], make_directions(p, 1, np.random.default_rng(6))[0]["x"])


def test_fd_estimates_match_exact_jvp_and_leave_arguments_alone():
    p = mixed()
    v = make_directions(p, 1, np.random.default_rng(1))[0]
    v_before = {k: a.copy() for k, a in v.items()}
    exact = p.J_fwd @ flatten(p.inputs, v)
    for estimate in (fd_jvp, fd_jvp_richardson, fd_jvp_large_step):
        got = flatten(p.outputs, estimate(p, v))
        np.testing.assert_allclose(got, exact, rtol=0, atol=1e-8 * np.abs(exact).max())
    err_c = np.abs(flatten(p.outputs, fd_jvp(p, v)) - exact).max()
    err_r = np.abs(flatten(p.outputs, fd_jvp_richardson(p, v)) - exact).max()
    assert err_r <= err_c
    for k in v:
        np.testing.assert_array_equal(v[k], v_before[k])
    # The overwritten input `out` has no influence: its column of J v is exactly zero.
    only_out = {k: np.zeros_like(a) for k, a in v.items()}
    only_out["out"] = np.ones(2)
    assert not flatten(p.outputs, fd_jvp(p, only_out)).any()


# ----------------------------------------------------------------------------- right derivatives pass

@pytest.mark.parametrize("mode", MODES)
def test_correct_float64_passes(mode):
    verdicts = run(mixed(), mode)
    assert list(verdicts) == [fd_name(mode), "zero", "dot"]
    assert_all_pass(verdicts)
    fd = verdicts[fd_name(mode)]
    assert fd.metrics["refinement"] == "none" and fd.metrics["directions"] == 2
    assert len(fd.metrics["h"]) == 2 and all(0 < h < 1e-4 for h in fd.metrics["h"])
    assert fd.metrics["max_abs_err"] < 1e-7


@pytest.mark.parametrize("mode", MODES)
def test_correct_float32_passes(mode):
    assert_all_pass(run(mixed(dtype="float32"), mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("offset", [1e3, 1e4])
def test_float32_cancellation_passes_with_default_tolerances(mode, offset):
    """F(x) = (x + c) - c with the derivative computed the same way in float32: each entry of the AD
    vector is off by up to half an ulp of c (3e-5 for 1e3, 5e-4 for 1e4), whatever its own size."""
    n = 200
    x0 = np.random.default_rng(3).standard_normal(n)
    big = np.float32(offset)

    def cancelling(problem, values):
        return {k: ((np.asarray(a, np.float32) + big) - big).astype(np.float32) for k, a in values.items()}

    p = NumpyProblem(lambda s: {"x": (s["x"] + offset) - offset}, {"x": x0}, dtype="float32",
                     jacobian=np.eye(n), jvp=cancelling, vjp=cancelling)
    verdicts = run(p, mode)
    assert_all_pass(verdicts)
    assert verdicts[fd_name(mode)].metrics["refinement"] == "none"
    if offset == 1e4:
        # The test means something: a purely per-entry relative rule would reject this AD vector.
        v = make_directions(p, 1, np.random.default_rng(0))[0]
        ad, ref = cancelling(p, v)["x"].astype(np.float64), v["x"]
        tol = DEFAULT_TOLERANCES["float32"]
        assert (np.abs(ad - ref) > tol.atol + tol.rtol * np.abs(ref)).sum() > 10


def test_kinked_function_away_from_the_kink_passes():
    x0 = np.array([-0.5, 0.3, 1.2, -2.0, 0.05])
    F = lambda s: {"y": np.maximum(s["x"], 0.0) * s["x"] + np.abs(s["x"])}     # noqa: E731
    slope = np.where(x0 > 0, 2 * x0 + 1, -1.0)
    p = NumpyProblem(F, {"x": x0}, jacobian=np.diag(slope))
    for mode in MODES:
        assert_all_pass(run(p, mode))


# ----------------------------------------------------------------------------- wrong derivatives fail

def _plant_entry(J):
    J[5, 0] += 1.0          # d y[1] / d x[0]
    return J


WRONG = {
    "sign flip": lambda J: -J,
    "factor 2": lambda J: 2 * J,
    "one entry": _plant_entry,
    "1% error": lambda J: 1.01 * J,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(WRONG))
def test_consistently_wrong_derivative_fails_fd_and_names_the_entry(kind, mode):
    edit = WRONG[kind]
    verdicts = run(mixed(fwd_edit=edit, rev_edit=edit), mode)
    fd = verdicts[fd_name(mode)]
    assert fd.verdict == "fail", fd.message
    assert fd.metrics["refinement"] == "richardson and large-step both failed"
    assert fd.metrics["directions"] == 4
    assert "derivative is at fault" in fd.message
    assert verdicts["dot"].verdict == "pass"          # forward and reverse are wrong the same way
    assert verdicts["zero"].verdict == "pass"
    assert fd.worst and fd.worst[0].abs_err > 0
    if mode == "forward":
        assert "J v differs from finite differences at " in fd.message
    else:
        assert "<J^T w, v> differs from <w, J v> by finite differences in dir " in fd.message
    # Localization: the full Jacobian names the entry (state of 11 inputs x 9 outputs).
    assert "full " + mode + " Jacobian: worst entry" in fd.message
    if kind == "one entry":
        assert fd.worst[0].index == "y[1] / x[0]"
        assert fd.worst[0].ad == pytest.approx(fd.worst[0].fd + 1.0, abs=1e-6)
        assert sum(" / " in w.index for w in fd.worst) == 1    # only that entry is outside tolerance


@pytest.mark.parametrize("mode", MODES)
def test_zero_gradient_is_its_own_failure(mode):
    zero = lambda J: 0 * J      # noqa: E731
    verdicts = run(mixed(fwd_edit=zero, rev_edit=zero), mode)
    z = verdicts["zero"]
    assert z.verdict == "fail"
    assert z.message.startswith(ZERO_MESSAGE + " (max |FD| = ")
    assert verdicts[fd_name(mode)].verdict == "fail"


@pytest.mark.parametrize("mode", MODES)
def test_nan_gradient_fails_with_its_own_message(mode):
    def nan_entry(J):
        J[4, 2] = np.nan    # d y[0] / d x[2]
        return J

    verdicts = run(mixed(fwd_edit=nan_entry, rev_edit=nan_entry), mode)
    z = verdicts["zero"]
    assert z.verdict == "fail"
    where = "y[0]" if mode == "forward" else "x[2]"
    assert z.message.startswith(f"{NONFINITE_MESSAGE} {where}"), z.message
    assert ZERO_MESSAGE not in z.message
    assert verdicts[fd_name(mode)].verdict == "fail"


def test_forward_right_reverse_wrong_is_caught_by_dot():
    verdicts = run(mixed(rev_edit=_plant_entry), "forward")
    assert verdicts["fd-forward"].verdict == "pass"
    dot = verdicts["dot"]
    assert dot.verdict == "fail"
    assert "forward and reverse disagree" in dot.message
    assert "the reverse derivative is the suspect" in dot.message
    assert dot.worst[0].index == "y[1] / x[0]"        # localized in the reverse Jacobian
    assert run(mixed(rev_edit=_plant_entry), "reverse")["fd-reverse"].verdict == "fail"


# -- missing accumulation, with the reverse sweeps written as shadow updates (Enzyme's convention:
#    the shadow holds the cotangent of the final state on entry and J^T w on exit).

def _inplace_square_vjp(accumulate: bool):
    """A[i] <- A[i] * A[i]: the two reads of A[i] each contribute A[i] * t to the adjoint."""
    def vjp(problem, w):
        A = problem.s0["A"]
        dA = np.array(w["A"], dtype=np.float64)
        t = dA.copy()
        dA[:] = 0.0                   # A was overwritten: its incoming cotangent is consumed
        dA += A * t                   # adjoint of the first read
        if accumulate:
            dA += A * t               # adjoint of the second read
        else:
            dA = A * t                # bug: the second read overwrites the first
        return {"A": dA}
    return vjp


def _unwritten_input_vjp(accumulate: bool):
    """out[i] <- out[i] + x[i]*x[i]; x is not written, so its shadow must keep the incoming w_x."""
    def vjp(problem, w):
        x = problem.s0["x"]
        dx = np.array(w["x"], dtype=np.float64)
        dout = np.array(w["out"], dtype=np.float64)      # out is read with coefficient 1: stays
        if accumulate:
            dx += 2 * x * dout
        else:
            dx = 2 * x * dout         # bug: overwrote the cotangent x carried in
        return {"x": dx, "out": dout}
    return vjp


@pytest.mark.parametrize("accumulate", [True, False])
def test_missing_accumulation_in_place_square(accumulate):
    A0 = np.array([0.5, -1.5, 2.0, 0.7, -0.3])
    p = NumpyProblem(lambda s: {"A": s["A"] * s["A"]}, {"A": A0}, vjp=_inplace_square_vjp(accumulate))
    rev, fwd = run(p, "reverse"), run(p, "forward")
    if accumulate:
        assert_all_pass(rev)
        assert_all_pass(fwd)
    else:
        assert rev["fd-reverse"].verdict == "fail"
        assert rev["fd-reverse"].worst[0].index.startswith("A[")     # localized: A[i] / A[i]
        assert fwd["fd-forward"].verdict == "pass" and fwd["dot"].verdict == "fail"


@pytest.mark.parametrize("accumulate", [True, False])
def test_missing_accumulation_of_an_unwritten_input(accumulate):
    x0, out0 = np.array([0.4, -1.1, 0.9, 1.6]), np.array([1.0, 2.0, -0.5, 0.0])
    F = lambda s: {"x": s["x"], "out": s["out"] + s["x"] * s["x"]}    # noqa: E731
    p = NumpyProblem(F, {"x": x0, "out": out0}, vjp=_unwritten_input_vjp(accumulate))
    rev = run(p, "reverse")
    if accumulate:
        assert_all_pass(rev)
    else:
        assert rev["fd-reverse"].verdict == "fail"
        assert rev["dot"].verdict == "fail"
        assert rev["fd-reverse"].worst[0].index.startswith("x[")     # x[i] / x[i]: the identity part


# ----------------------------------------------------------------------------- FD refinements

def test_richardson_rescues_a_high_curvature_primal():
    """sin(1e4 x): the central difference's h^2 error (~1e-4) exceeds float64's rtol, Richardson's does not."""
    x0 = np.array([0.1, 0.35, -0.2, 0.8])
    p = NumpyProblem(lambda s: {"y": np.sin(1e4 * s["x"])}, {"x": x0})
    for mode in MODES:
        verdicts = run(p, mode)
        assert_all_pass(verdicts)
        fd = verdicts[fd_name(mode)]
        assert fd.metrics["refinement"] == "richardson"
        assert fd.metrics["stages"]["central"] > 1 and fd.metrics["directions"] == 4


def test_large_step_rescues_a_noisy_primal():
    """A primal with deterministic noise of 1e-10 (like a reordered reduction): the small steps
    amplify it beyond tolerance; the Richardson estimate at the large step does not."""
    x0 = np.array([1.0, -1.3, 0.8, 1.7, -0.9])

    def noisy(s):
        x = np.asarray(s["x"], dtype=np.float64)
        jitter = np.random.default_rng(zlib.crc32(x.tobytes())).uniform(-1, 1, x.shape)
        return {"y": x * x + 1e-10 * jitter}

    p = NumpyProblem(noisy, {"x": x0}, jacobian=np.diag(2 * x0))
    for mode in MODES:
        fd = run(p, mode)[fd_name(mode)]
        assert fd.verdict == "pass", fd.message
        assert fd.metrics["refinement"] == "large-step"
        assert len(fd.metrics["h_large"]) == 4


def test_noisy_primal_and_wrong_gradient_reports_unstable_fd():
    x0 = np.array([1.0, -1.3, 0.8])

    def noisy(s):
        x = np.asarray(s["x"], dtype=np.float64)
        return {"y": x * x + 1e-6 * np.random.default_rng(zlib.crc32(x.tobytes())).uniform(-1, 1, 3)}

    p = NumpyProblem(noisy, {"x": x0}, jacobian=np.diag(2 * x0), fwd_edit=lambda J: -J)
    fd = run(p, "forward")["fd-forward"]
    assert fd.verdict == "fail"
    assert "finite differences change with the step size" in fd.message


# ----------------------------------------------------------------------------- robustness

class MutatingProblem:
    """A sloppy adapter: base_point hands out its own arrays, the primal squares its input in place
    and returns a reused buffer, the derivatives overwrite their argument like shadows do."""

    def __init__(self):
        self.A = np.array([0.5, -1.5, 2.0, 0.7])
        self.inputs = self.outputs = [StateVar("A", (4,))]
        self.dtype = "float64"
        self._buffer = np.zeros(4)

    def base_point(self):
        return {"A": self.A}

    def primal64(self, state):
        state["A"] *= state["A"]
        self._buffer[:] = state["A"]
        return {"A": self._buffer}

    def jvp(self, tangent):
        tangent["A"] *= 2 * self.A
        return tangent

    def vjp(self, cotangent):
        cotangent["A"] *= 2 * self.A
        return cotangent


@pytest.mark.parametrize("mode", MODES)
def test_inputs_are_never_mutated(mode):
    p = MutatingProblem()
    before = p.A.copy()
    assert_all_pass(run(p, mode))
    np.testing.assert_array_equal(p.A, before)
    dirs = make_directions(p, 2, np.random.default_rng(0))
    w = make_cotangent(p, np.random.default_rng(1))
    saved = [d["A"].copy() for d in dirs], w["A"].copy()
    fds = [fd_jvp(p, d) for d in dirs]
    assert check_forward_fd(p, dirs, fds, None, None).verdict == "pass"
    assert check_reverse_fd(p, dirs, fds, w, None, None).verdict == "pass"
    assert check_dot(p, dirs, w, None, None).verdict == "pass"
    for d, s in zip(dirs, saved[0]):
        np.testing.assert_array_equal(d["A"], s)
    np.testing.assert_array_equal(w["A"], saved[1])
    np.testing.assert_array_equal(p.A, before)


def test_problems_without_inputs_or_outputs_are_skipped():
    p = mixed()
    p.inputs = []
    verdicts = run(p, "forward")
    assert [v.verdict for v in verdicts.values()] == ["skip"] * 3
    assert "no differentiable inputs" in verdicts["fd-forward"].message
    q = mixed()
    q.outputs = []
    assert all(v.verdict == "skip" and "no differentiable outputs" in v.message for v in run(q, "reverse").values())
    assert check_dot(q, [], {}, None, None).verdict == "skip"


def test_options_and_bad_mode():
    verdicts = run(mixed(), "reverse", dot=False, zero_guard=False, directions=3)
    assert list(verdicts) == ["fd-reverse"] and verdicts["fd-reverse"].metrics["directions"] == 3
    with pytest.raises(ValueError, match="primal"):
        run(mixed(), "primal")
    # Same seed, same numbers.
    a = run(mixed(), "forward", seed=11)["fd-forward"].metrics
    b = run(mixed(), "forward", seed=11)["fd-forward"].metrics
    assert a["h"] == b["h"] and a["max_abs_err"] == b["max_abs_err"]


def test_check_zero_directly():
    fd = [np.array([0.0, 0.5, -0.2])]
    z = check_zero([np.zeros(3)], fd)
    assert z.verdict == "fail" and z.message == f"{ZERO_MESSAGE} (max |FD| = 0.5)"
    assert check_zero([np.zeros(3)], [np.zeros(3)]).verdict == "pass"
    assert check_zero([np.zeros(3)], [np.full(3, 1e-12)], atol=1e-9).verdict == "pass"   # FD noise only
    assert check_zero([np.array([0.0, 0.4, -0.2])], fd).verdict == "pass"
    nan = check_zero([{"g": np.array([0.0, np.inf, 1.0])}], [np.array([0.0, 0.5, 1.0])])
    assert nan.verdict == "fail" and nan.message.startswith(f"{NONFINITE_MESSAGE} g[1]")
    # NaN that the primal produces too is not blamed on AD.
    assert check_zero([np.array([np.nan, 1.0])], [np.array([np.nan, 1.0])]).verdict == "pass"


def test_localize_limits_and_agreement():
    assert localize(mixed()) == []                              # right derivative: nothing to show
    wrong = localize(mixed(fwd_edit=_plant_entry))
    assert [w.index for w in wrong] == ["y[1] / x[0]"]
    assert localize(mixed(fwd_edit=_plant_entry), max_size=10) == []
    assert [w.index for w in localize(mixed(rev_edit=_plant_entry), mode="reverse")] == ["y[1] / x[0]"]
    assert entry_names(mixed().outputs)[5] == "y[1]"


def test_big_state_skips_localization_but_still_fails():
    n = 100
    p = NumpyProblem(lambda s: {"x": 3.0 * s["x"]}, {"x": np.linspace(-1, 1, n)},
                     jacobian=3.0 * np.eye(n), fwd_edit=lambda J: -J)
    fd = run(p, "forward")["fd-forward"]
    assert fd.verdict == "fail"
    assert fd.metrics["localization"].startswith("skipped: 100 x 100 Jacobian exceeds max_size 4096")
    assert "x[" in fd.worst[0].index and math.isfinite(fd.worst[0].rel_err)


@pytest.mark.parametrize("refusal", [NotImplementedError("no reverse"),
                                     UnsupportedError("reverse of this loop is not supported", file="k.py", line=3)])
def test_dot_is_skipped_when_the_other_mode_is_refused(refusal):
    def refuse(problem, w):
        raise refusal

    verdicts = run(mixed(vjp=refuse), "forward")
    assert verdicts["fd-forward"].verdict == "pass"
    assert verdicts["dot"].verdict == "skip" and type(refusal).__name__ in verdicts["dot"].message


def test_non_finite_primal_near_the_base_point_is_reported_as_such():
    p = NumpyProblem(lambda s: {"y": np.sqrt(s["x"])}, {"x": np.array([0.0, 1.0])},
                     jacobian=np.diag([1e3, 0.5]))
    with np.errstate(invalid="ignore"):
        verdicts = run(p, "forward")
    fd = verdicts["fd-forward"]
    assert fd.verdict == "fail" and fd.metrics["fd_nonfinite"]
    assert fd.message.startswith("finite-difference reference is not finite at y[0]")
    assert verdicts["zero"].verdict == "pass"


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_first_direction_chosen_by_the_case_is_checked(mode):
    """`first` replaces the first direction (forward) or cotangent (reverse); the others stay seeded."""
    seen = []

    def record_jvp(problem, tangent):
        seen.append({k: np.array(v) for k, v in tangent.items()})
        return unflatten(problem.outputs, problem.J_fwd @ flatten(problem.inputs, tangent))

    def record_vjp(problem, cotangent):
        seen.append({k: np.array(v) for k, v in cotangent.items()})
        return unflatten(problem.inputs, problem.J_rev.T @ flatten(problem.outputs, cotangent))

    problem = mixed(jvp=record_jvp if mode == "forward" else None, vjp=record_vjp if mode == "reverse" else None)
    chosen = {"x": [1.0, 0.0, 0.0, 0.0]}
    verdicts = run(problem, mode, dot=False, first=chosen)
    assert_all_pass(verdicts)
    first = seen[0]
    assert np.array_equal(first["x"], chosen["x"])
    assert all(not np.any(first[name]) for name in first if name != "x"), "omitted arguments are zero"
    assert any(np.any(s["x"] != chosen["x"]) for s in seen[1:]), "the other directions stay random"
