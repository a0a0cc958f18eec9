"""Proof that the oracles catch a wrong derivative.

A derivative rule of harness.engine.rules.table.PARTIALS is deliberately broken (monkeypatched), real cases
from cases/ are run through harness.execution.runner.Runner exactly as the pytest plugin runs them, and:
  * the runs that differentiate through the broken rule end in FAIL (ZERO when the rule makes the
    whole gradient zero), with a message naming the failing oracle and its worst entries;
  * the runs that never use that rule still PASS;
  * harness.report.explain.explain_outcome renders a readable account (state, oracle, AD/FD table, the
    command that reproduces the run).

Generated kernels are cached on disk by content, so a changed rule produces a different file; each
scenario uses a fresh Runner because an Engine caches its plans in memory.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.engine.rules import table as rules

ROOT = Path(__file__).resolve().parents[2]


def _runs(case_file: str, backend: str, modes=("forward", "reverse"), dtype="float64", root: Path = ROOT):
    from harness.cases import expand_runs, load_case_file
    path = Path(case_file) if Path(case_file).is_absolute() else root / case_file
    runs = [run for case in load_case_file(path, root) if case.variant is None
            for run in expand_runs(case, backend)]
    chosen = [r for r in runs if r.mode in modes and (r.dtype in (dtype, None))]
    assert chosen, f"{case_file}: no runs for modes {modes} dtype {dtype}: {[r.name for r in runs]}"
    return chosen


@pytest.fixture
def runner(launching_backend):
    """A fresh Runner (fresh engines, so no plan built with another rule table is reused)."""
    from harness.execution.runner import Runner
    return Runner(ROOT, launching_backend.name)


def _execute(runner, runs):
    return {f"{r.case.id}::{r.name}": runner.execute(r) for r in runs}


def _failed_oracles(outcome):
    return {v.name: v for v in outcome.oracles if v.verdict == "fail"}


def _assert_states(outcomes, expected_state):
    bad = {k: f"{o.state}: {o.message}" for k, o in outcomes.items() if o.state != expected_state}
    assert not bad, f"expected {expected_state} for every run, got:\n" + "\n".join(f"  {k}: {v}" for k, v in bad.items())


# ----------------------------------------------------------------------------- a sign error in sin

def test_wrong_sin_rule_fails_math_heavy_and_spares_the_rest(runner, launching_backend, monkeypatch):
    monkeypatch.setitem(rules.PARTIALS, "sin", ("-cos(x)",))
    be = launching_backend.name
    affected = _execute(runner, _runs("cases/math-heavy.yaml", be))
    _assert_states(affected, "FAIL")
    for key, outcome in affected.items():
        fd_name = f"fd-{outcome.mode}"
        failed = _failed_oracles(outcome)
        assert fd_name in failed, f"{key}: {fd_name} should fail; failed: {list(failed)}"
        assert outcome.message.startswith(f"{fd_name}: "), outcome.message
        assert re.search(r"AD -?[\d.e+-]+ vs FD -?[\d.e+-]+", outcome.message), outcome.message
        worst = failed[fd_name].worst
        assert worst and all(w.abs_err > 0 for w in worst), f"{key}: no worst entries"
        if outcome.mode == "forward":
            # entry-wise comparison: the worst entries are elements of the output array
            assert all(re.fullmatch(r"out\[\d+\]", w.index) for w in worst), [w.index for w in worst]
            assert f"at {worst[0].index} " in outcome.message
        else:
            assert all(re.fullmatch(r"dir \d+", w.index) for w in worst), [w.index for w in worst]
        # the rule is broken identically in both modes, so forward and reverse still agree
        assert "dot" not in failed, f"{key}: dot should hold (both modes share the wrong rule)"
        assert {v.name for v in outcome.oracles if v.verdict == "pass"} >= {"zero", "dot"}

    unaffected = {}
    for case_file in ("cases/axpy.yaml", "cases/stencil.yaml", "cases/polynomial.yaml"):
        unaffected.update(_execute(runner, _runs(case_file, be)))
    _assert_states(unaffected, "PASS")


# ----------------------------------------------------------------------------- a swapped product rule

def test_wrong_product_rule_fails_axpy(runner, launching_backend, monkeypatch):
    """d(x*y)/dy = y instead of x: axpy's a * x[i] gets dx = x instead of a."""
    monkeypatch.setitem(rules.PARTIALS, "mul", ("y", "y"))
    be = launching_backend.name
    outcomes = _execute(runner, _runs("cases/axpy.yaml", be))
    _assert_states(outcomes, "FAIL")
    for key, outcome in outcomes.items():
        assert f"fd-{outcome.mode}" in _failed_oracles(outcome), f"{key}: {outcome.message}"
    # x * x: the wrong rule happens to give the right partials (y == x), and the oracles judge numbers
    same = _execute(runner, _runs("cases/enzyme-2395-inplace.yaml", be))
    _assert_states(same, "PASS")


def test_wrong_rule_changes_the_generated_file(kernels, backend, monkeypatch):
    """The disk cache is keyed by content: a broken rule cannot reuse a correct kernel's file."""
    import numpy as np
    from harness.core.activity import Duplicated
    from harness.engine.runtime.launch import Engine, LaunchConfig
    args = [Duplicated(backend.asarray(np.zeros(4)), backend.asarray(np.zeros(4))),
            Duplicated(backend.asarray(np.ones(4)), backend.asarray(np.zeros(4)))]
    good, _ = Engine(backend).prepare(kernels.exp_map, LaunchConfig.threads(4, 4), args, "reverse")
    monkeypatch.setitem(rules.PARTIALS, "exp", ("2 * r",))
    bad, _ = Engine(backend).prepare(kernels.exp_map, LaunchConfig.threads(4, 4), args, "reverse")
    assert good.source_path != bad.source_path
    assert "float64(2.0) * " in Path(bad.source_path).read_text()


# ----------------------------------------------------------------------------- silent zeros

def test_zero_product_rule_is_a_zero_state(runner, launching_backend, monkeypatch):
    """A[i] = A[i] * A[i]: with both partials of mul zero the whole gradient is zero: ZERO, not FAIL."""
    monkeypatch.setitem(rules.PARTIALS, "mul", ("0", "0"))
    outcomes = _execute(runner, _runs("cases/inplace-square-all.yaml", launching_backend.name, dtype=None))
    _assert_states(outcomes, "ZERO")
    for key, outcome in outcomes.items():
        assert outcome.message.startswith("zero: gradient is all zero where finite differences are not"), \
            f"{key}: {outcome.message}"
        assert "zero" in _failed_oracles(outcome)


def _exp_case(tmp_path: Path, n: int, modes=("forward", "reverse")) -> Path:
    path = tmp_path / "exp-map.yaml"
    path.write_text(
        "id: exp-map-test\n"
        "title: out = exp(x), a test-only case\n"
        "kernel: tests/kernels_for_tests.py:exp_map\n"
        f"launch: {{threads: {n}, block: {n}}}\n"
        "args:\n"
        f"  out: {{array: {{shape: [{n}], dtype: float64, init: zeros}}, activity: duplicated}}\n"
        f"  x:   {{array: {{shape: [{n}], dtype: float64, init: {{uniform: [-1, 1]}}}}, activity: duplicated}}\n"
        f"modes: [{', '.join(modes)}]\n")
    return path


def test_zero_exp_rule_is_caught(runner, launching_backend, monkeypatch, tmp_path):
    """out = exp(x) with a zero exp rule: d out / d x is silently 0. The run must not pass, and the
    worst entries show AD 0 against a nonzero FD."""
    runs = _runs(_exp_case(tmp_path, 8), launching_backend.name, dtype=None)
    _assert_states(_execute(runner, runs), "PASS")          # the case itself is sound
    monkeypatch.setitem(rules.PARTIALS, "exp", ("0",))
    from harness.execution.runner import Runner
    outcomes = _execute(Runner(ROOT, launching_backend.name), runs)
    for key, outcome in outcomes.items():
        assert outcome.state in ("FAIL", "ZERO"), f"{key}: {outcome.state}: {outcome.message}"
        assert re.search(r"worst entry out\[\d\] / x\[\d\]: AD -?0 vs FD -?[1-9]", outcome.message), outcome.message


def test_zero_exp_rule_is_a_zero_state(runner, launching_backend, monkeypatch, tmp_path):
    """The zero guard works per argument: x's identity pass-through (x is unwritten, so J v and J^T w
    carry v_x and w_x) no longer hides a silently zero d out/d x."""
    monkeypatch.setitem(rules.PARTIALS, "exp", ("0",))
    outcomes = _execute(runner, _runs(_exp_case(tmp_path, 8), launching_backend.name, dtype=None))
    _assert_states(outcomes, "ZERO")
    for key, outcome in outcomes.items():
        assert outcome.message.startswith("zero: gradient is zero with respect to "), f"{key}: {outcome.message}"
        zero = _failed_oracles(outcome)["zero"]
        assert "x" in zero.metrics["zero_arguments"], zero.metrics


def test_zero_exp_rule_in_a_mixed_kernel_is_a_plain_failure(runner, launching_backend, monkeypatch):
    """math_heavy uses exp among many terms: a zero exp rule leaves a nonzero, wrong gradient: FAIL."""
    monkeypatch.setitem(rules.PARTIALS, "exp", ("0",))
    outcomes = _execute(runner, _runs("cases/math-heavy.yaml", launching_backend.name, modes=("forward",)))
    _assert_states(outcomes, "FAIL")


# ----------------------------------------------------------------------------- readable failures

def test_failure_is_localized_and_explained(runner, launching_backend, monkeypatch, tmp_path):
    """A small state gets a full-Jacobian localization; explain_outcome shows it as a table."""
    from harness.report.explain import explain_outcome
    monkeypatch.setitem(rules.PARTIALS, "exp", ("2 * r",))
    runs = _runs(_exp_case(tmp_path, 4), launching_backend.name, dtype=None)
    outcomes = _execute(runner, runs)
    _assert_states(outcomes, "FAIL")
    for key, outcome in outcomes.items():
        mode = outcome.mode
        fd_name = f"fd-{mode}"
        verdict = _failed_oracles(outcome)[fd_name]
        # localization: the full Jacobian names the wrong entries out[k] / x[k], AD = 2 FD
        assert f"full {mode} Jacobian: worst entry out[" in verdict.message, verdict.message
        diag = [w for w in verdict.worst if re.fullmatch(r"out\[(\d+)\] / x\[\1\]", w.index)]
        assert len(diag) == 4, [w.index for w in verdict.worst]
        for w in diag:
            assert w.ad == pytest.approx(2 * w.fd, rel=1e-6), w
        text = explain_outcome(outcome)
        assert text.startswith("FAIL: exp-map-test ["), text
        assert f"FAIL  {fd_name}:" in text
        header = [line for line in text.splitlines() if line.split()[:3] == ["entry", "AD", "FD"]]
        assert header and "rel err" in header[0], text
        assert re.search(r"out\[\d\] / x\[\d\]\s+-?[\d.]+\s+-?[\d.]+", text), text
        assert f"reproduce: pytest '{outcome.run_id}' --backend {launching_backend.name}" in text
        assert f"generated {mode} kernel: " in text
        assert Path(outcome.sources[mode]).is_file()


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_outcome_records_its_own_modes_kernel(runner, launching_backend, tmp_path, mode):
    outcome = runner.execute(_runs(_exp_case(tmp_path, 4), launching_backend.name, modes=(mode,), dtype=None)[0])
    assert outcome.state == "PASS", outcome.message
    assert Path(outcome.sources[mode]).name.startswith(f"exp_map__{mode}_"), outcome.sources
    assert [j.mode for j in outcome.jobs if j.parent is None] == [mode], [(j.function, j.mode) for j in outcome.jobs]


def test_explain_of_a_math_heavy_failure(runner, launching_backend, monkeypatch):
    from harness.report.explain import explain_outcome
    monkeypatch.setitem(rules.PARTIALS, "sin", ("-cos(x)",))
    outcome = next(iter(_execute(runner, _runs("cases/math-heavy.yaml", launching_backend.name,
                                               modes=("forward",))).values()))
    text = explain_outcome(outcome)
    lines = text.splitlines()
    assert lines[0].startswith("FAIL: math-heavy [forward-float64]")
    assert any(line.strip().startswith("FAIL  fd-forward:") for line in lines)
    assert any(line.strip().startswith("PASS  dot:") for line in lines)
    table = [i for i, line in enumerate(lines) if line.split()[:3] == ["entry", "AD", "FD"]]
    assert table, text
    assert re.match(r"\s+out\[\d+\]\s+-?[\d.e+-]+\s+-?[\d.e+-]+", lines[table[0] + 1]), lines[table[0] + 1]
    repro = f"reproduce: pytest 'cases/math-heavy.yaml::forward-float64' --backend {launching_backend.name}"
    assert repro in [line.strip() for line in lines], text
