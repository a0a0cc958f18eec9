"""The state policy and default tolerances live in harness/policy.py alone, and the run strategies
are picked by kind of run."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness import policy
from harness.model import CheckSpec, FDSpec

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def _state_collections(path: Path):
    """Tuple/set/list literals naming two or more run states: a copy of the policy."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
            names = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in policy.STATES]
            if len(names) >= 2:
                yield node.lineno, names


def test_no_module_but_the_policy_lists_run_states():
    copies = [f"{p.relative_to(HARNESS.parent)}:{line}: {names}"
              for p in sorted(HARNESS.rglob("*.py")) if p.name != "policy.py"
              for line, names in _state_collections(p)]
    assert copies == []


def _state_literals(path: Path):
    """String literals spelling a run state outside `__all__` (where "ZERO" names an oracle)."""
    tree = ast.parse(path.read_text())
    exported = {id(e) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                for e in ast.walk(node.value)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in policy.STATES and id(node) not in exported:
            yield node.lineno, node.value


def test_every_module_names_states_through_the_enum():
    literals = [f"{p.relative_to(HARNESS.parent)}:{line}: {value!r}"
                for p in sorted(HARNESS.rglob("*.py")) if p.name != "policy.py"
                for line, value in _state_literals(p)]
    assert literals == []


def test_state_sets_partition_the_states():
    assert policy.PASSING | policy.FAILING == set(policy.STATES)
    assert policy.BUG_STATES < policy.FAILING and "XPASS" not in policy.BUG_STATES
    assert policy.FIXED < policy.PASSING


@pytest.mark.parametrize("state,strict,shown", [
    ("PASS", True, "passed"), ("UNSUPPORTED", True, "passed"), ("XFAIL", True, "xfailed"),
    ("SKIP", True, "skipped"), ("XPASS", True, "failed"), ("XPASS", False, "passed"),
    ("ZERO", True, "failed"), ("ERROR", False, "failed")])
def test_pytest_result(state, strict, shown):
    assert policy.pytest_result(state, strict) == shown


@pytest.mark.parametrize("engine,shown", [("bundled", "passed"), ("warp", "skipped"), ("taichi", "skipped"),
                                          ("other-package", "skipped")])
def test_an_adapters_refusal_is_a_skip_the_bundled_engines_a_pass(engine, shown):
    assert policy.pytest_result("UNSUPPORTED", True, engine) == shown
    assert policy.pytest_result("FAIL", True, engine) == "failed"


def test_regressions_and_catches_agree():
    from harness.selftest.campaign import caught
    from harness.report.compare import BAD_STATES
    assert BAD_STATES == policy.FAILING
    for before in policy.STATES:
        for after in policy.STATES:
            assert caught(before, after) == (before in policy.PASSING and after in policy.FAILING)
            assert policy.is_new_failure(before, after) == (after in policy.FAILING and before not in policy.FAILING)


def test_tolerance_tables_come_from_the_policy():
    from harness.checks.nondet import NONDET_RTOL
    from harness.oracles import DEFAULT_TOLERANCES
    from harness.checks.relations import RELATION_RTOL
    assert {k: (t.rtol, t.atol) for k, t in DEFAULT_TOLERANCES.items()} == policy.GRADIENT_RTOL_ATOL
    assert NONDET_RTOL is policy.REPEAT_RTOL and RELATION_RTOL is policy.RELATION_RTOL
    assert policy.repeat_rtol("float32") == 1e-5 and policy.repeat_rtol(None) == 1e-12


def test_fd_defaults_come_from_one_place():
    from harness.execution.strategies import GradientCheck
    assert FDSpec().directions == policy.FD_DIRECTIONS
    on = GradientCheck.from_check(CheckSpec())
    assert (on.fd, on.directions, on.rtol, on.atol) == (True, policy.FD_DIRECTIONS, None, None)
    off = GradientCheck.from_check(CheckSpec(fd=None))
    assert (off.fd, off.directions) == (False, policy.FD_DIRECTIONS_WITHOUT_FD)
    custom = GradientCheck.from_check(CheckSpec(fd=FDSpec(3, 1e-3, None), dot=False))
    assert custom.oracle_kwargs() == dict(directions=3, rtol=1e-3, atol=None, dot=False, zero_guard=True, fd=True)
    assert off.oracle_kwargs()["fd"] is False             # check: {fd: false} runs no finite differences


def test_one_strategy_per_kind_of_run():
    from types import SimpleNamespace as NS

    from harness.execution.strategies import strategy_for
    def run(mode, nested=None, program=None, replay=None):
        return NS(mode=mode, case=NS(check=CheckSpec(nested=nested), program=program, replay=replay))
    assert strategy_for(run("reverse"), can_launch=False).name == "compile-only"
    assert strategy_for(run("primal"), can_launch=True).name == "primal"
    assert strategy_for(run("primal", {"function": "f"}), can_launch=True).name == "nested"
    assert strategy_for(run("forward"), can_launch=True).name == "gradient"
    for tier in (True, False):                 # a program compiles its launches itself on a ptx tier
        assert strategy_for(run("reverse", program=object()), can_launch=tier).name == "program"
        assert strategy_for(run("reverse", replay={}), can_launch=tier).name == "program"
