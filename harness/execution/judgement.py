"""The one judgement of a run: everything that decides a run's state, composed in one function.

    judge_run(outcome, expect, engine, can_launch, verdicts=..., error=...)   a run that reported
    judge_run(outcome, expect, engine, can_launch, death=(returncode, stderr)) an isolated run's
                                                                               process that died
    judge_run(outcome, skip=reason)                                            a run not run
    judge_run(outcome, lost=(error record, message))                           a run whose result
                                                                               was lost

In order, each rule seeing the state the one before gave:
0. a run not run (an engine that cannot run the case, an adapter on a compile-only tier) is SKIP;
   a run whose result was lost before anything could be judged (its case file did not load, the
   worker running it crashed, its isolated process printed nothing usable) is ERROR with that
   error, whatever the case expected; nothing else applies to either;
1. a dead isolated process is ERROR (category `fault`), or XFAIL when the case expects that crash
   (adapters/isolation.py: child_death, expected_death); nothing else applies to it;
2. the oracles' verdicts and the run's error against the expectation (verdicts.judge);
3. an adapter's refusal of a run expected to pass is UNSUPPORTED (adapters/expectations.py);
4. an adapter's device fault is ERROR whatever was expected, and an adapter's exception is not the
   known bug its xfail stands for (adapters/isolation.py: judge_engine_fault);
5. on a compile-only tier, an expected error that only a launch can raise, and a known bug that
   only a launch can show, are SKIP (nothing ran that could show them).
"""
from __future__ import annotations

from harness.adapters.expectations import judge_engine_refusal
from harness.adapters.isolation import child_death, expected_death, judge_engine_fault
from harness.model import ErrorRecord, Expectation, Outcome
from harness.policy import State
from harness.execution.verdicts import judge


def judge_run(outcome: Outcome, expect: Expectation | None = None, engine: str = "bundled", can_launch: bool = True,
              *, verdicts=(), error: Exception | None = None, death: tuple[int, str] | None = None,
              skip: str | None = None, lost: tuple[ErrorRecord, str] | None = None) -> Outcome:
    """Set `outcome`'s state and message (and, for a dead process or a lost result, its error) and
    return it."""
    if skip is not None:
        outcome.state, outcome.message = State.SKIP, skip
        return outcome
    if lost is not None:
        outcome.error, outcome.message = lost
        outcome.state = State.ERROR
        return outcome
    if death is not None:
        returncode, stderr = death
        return expected_death(child_death(outcome, engine, returncode, stderr), expect)
    outcome.state, outcome.message = judge(expect, list(verdicts), error)
    outcome.state, outcome.message = judge_engine_refusal(engine, expect, error, outcome.state, outcome.message)
    judge_engine_fault(engine, outcome, expect.state)
    if not can_launch:
        _compile_only(outcome, expect, error)
    return outcome


def _compile_only(outcome: Outcome, expect: Expectation, error) -> None:
    if error is None and expect.kind in ("error", "unsupported"):
        outcome.state = State.SKIP           # e.g. a tape overflow: only a launch can show it
        outcome.message = (f"compiled; the expected {expect.error_type or 'UnsupportedError'} "
                           "arises only when the kernel runs, which this compile-only tier does not do")
    elif outcome.state == State.XPASS:
        outcome.state = State.SKIP           # a known bug in the results (NONDET, FAIL) needs a launch
        outcome.message = (f"compiled; the known bug ({expect.reason}) shows only when the kernel runs, "
                           "which this compile-only tier does not do")
