"""The one judgement of a run (harness/execution/judgement.py): each rule in its place in the order."""
from __future__ import annotations

import signal

from harness.core.errors import UnsupportedError
from harness.execution.judgement import judge_run
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


def test_a_run_not_run_is_skip_and_a_lost_result_is_error_whatever_was_expected():
    skipped = judge_run(_outcome("warp"), skip="warp checks no bounds")
    assert (skipped.state, skipped.message) == ("SKIP", "warp checks no bounds")
    for expect in (Expectation(), XFAIL, Expectation(kind="unsupported")):
        lost = ErrorRecord("WorkerCrash", "the worker died", category="crash")
        o = judge_run(_outcome(), expect, "bundled", True, verdicts=PASSING, lost=(lost, "it died"))
        assert (o.state, o.message, o.error) == ("ERROR", "it died", lost)


def test_states_are_a_str_enum_written_as_their_names():
    import json

    from harness.policy import STATES, State
    o = judge_run(_outcome(), Expectation(), "bundled", True, verdicts=FAILING)
    assert o.state is State.FAIL
    assert type(o.to_json()["state"]) is str           # plain data: records cross processes (xdist)
    assert json.loads(json.dumps(o.to_json()))["state"] == "FAIL" and f"{o.state}" == "FAIL"
    assert Outcome.from_json(o.to_json()).state == State.FAIL
    assert [str(s) for s in STATES] == [s.name for s in State]


def test_the_expectation_is_rewritten_once_when_runs_are_expanded():
    """A per-mode expectation, then the engine's: each run carries the one it is judged against,
    and the reason its engine does not run it."""
    from harness.cases.expand import expand_runs
    from harness.model import Case, KernelRef
    warp_bug = Expectation(kind="xfail", reason="upstream", strict=False)
    case = Case(id="c", source="cases/c.yaml", kernel=KernelRef("kernels/x.py", "k"), args=(),
                modes=("primal", "reverse"), expect=Expectation(kind="unsupported"),
                expect_by_mode={"primal": Expectation()}, engine_expect={"warp": warp_bug})
    runs = {(r.engine, r.mode): r for r in expand_runs(case, "sim", ("bundled", "warp"))}
    assert runs["bundled", "primal"].case.expect == Expectation()
    assert runs["bundled", "reverse"].case.expect.kind == "unsupported"
    assert runs["warp", "primal"].case.expect == Expectation()         # an xfail covers derivative runs only
    assert runs["warp", "reverse"].case.expect is warp_bug
    assert all(r.skip is None for r in runs.values())
    optioned = Case(id="c", source="cases/c.yaml", kernel=KernelRef("kernels/x.py", "k"), args=(),
                    modes=("reverse",), engine={"launch": "packed"})
    (bundled,), (taichi,) = (expand_runs(optioned, "sim", (e,)) for e in ("bundled", "taichi"))
    assert bundled.skip is None and "configure the bundled engine" in taichi.skip
