"""The one judgement of a run (harness/judgement.py): each rule in its place in the order."""
from __future__ import annotations

import signal

from harness.errors import UnsupportedError
from harness.judgement import judge_run
from harness.model import ErrorRecord, Expectation, OracleVerdict, Outcome


def _outcome(engine="bundled", error=None):
    o = Outcome(run_id="cases/x.yaml::reverse", case_id="x", source="cases/x.yaml", variant=None, mode="reverse",
                dtype=None, backend="sim", state="PASS", engine=engine)
    o.error = error
    return o


PASSING = [OracleVerdict("fd-reverse", "pass", "ok")]
FAILING = [OracleVerdict("fd-reverse", "fail", "values differ")]
XFAIL = Expectation(kind="xfail", reason="known")


def test_verdicts_against_the_expectation():
    assert judge_run(_outcome(), Expectation(), "bundled", True, verdicts=PASSING).state == "PASS"
    assert judge_run(_outcome(), Expectation(), "bundled", True, verdicts=FAILING).state == "FAIL"
    assert judge_run(_outcome(), XFAIL, "bundled", True, verdicts=FAILING).state == "XFAIL"
    bundled_refusal = judge_run(_outcome(), Expectation(), "bundled", True, error=UnsupportedError("no"))
    assert bundled_refusal.state == "ERROR" and "unexpectedly unsupported" in bundled_refusal.message


def test_an_adapters_refusal_is_unsupported_not_an_error():
    o = judge_run(_outcome("warp"), Expectation(), "warp", True, error=UnsupportedError("no tuples"))
    assert (o.state, o.message) == ("UNSUPPORTED", "warp cannot run this: no tuples")


def test_an_adapters_exception_is_not_its_known_bug():
    o = _outcome("taichi", ErrorRecord("RuntimeError", "boom"))
    judge_run(o, XFAIL, "taichi", True, error=RuntimeError("boom"))
    assert o.state == "ERROR" and "not the known wrong derivative" in o.message


def test_compile_only_tier_skips_what_only_a_launch_shows():
    error_expected = Expectation(kind="error", error_type="TapeOverflowError")
    assert judge_run(_outcome(), error_expected, "bundled", False, verdicts=PASSING).state == "SKIP"
    assert judge_run(_outcome(), XFAIL, "bundled", False, verdicts=PASSING).state == "SKIP"
    assert judge_run(_outcome(), XFAIL, "bundled", True, verdicts=PASSING).state == "XPASS"


def test_a_dead_process_is_an_error_or_the_expected_crash():
    died = judge_run(_outcome("taichi"), Expectation(), "taichi", True, death=(-signal.SIGSEGV, "Segmentation fault"))
    assert died.state == "ERROR" and died.error.category == "fault" and "SIGSEGV" in died.message
    crash = Expectation(kind="xfail", reason="aborts", crash=True)
    known = judge_run(_outcome("taichi"), crash, "taichi", True, death=(-signal.SIGABRT, ""))
    assert known.state == "XFAIL" and known.message.startswith("known bug (aborts)")
