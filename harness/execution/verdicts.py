"""Turn oracle verdicts and errors into a run's state, given what the case expects."""
from __future__ import annotations

import re

from harness.core.errors import EngineInternalError, UnsupportedError
from harness.model import Expectation, JobRecord, OracleVerdict
from harness.policy import BUG_STATES, ORACLE_STATES, State


def observed_state(verdicts: list[OracleVerdict], error: Exception | None) -> tuple[str, str]:
    if error is not None:
        return State.ERROR, f"{type(error).__name__}: {error}"
    failed = [v for v in verdicts if v.verdict == "fail"]
    if not failed:
        return State.PASS, "all oracles hold: " + ", ".join(v.name for v in verdicts if v.verdict == "pass")
    for name, state in ORACLE_STATES.items():      # by rank (harness.policy)
        for v in failed:
            if v.name == name:
                return state, f"{v.name}: {v.message}"
    return State.FAIL, "; ".join(f"{v.name}: {v.message}" for v in failed)


def error_matches(expect: Expectation, error: Exception) -> str | None:
    """None when `error` is the expected one, else why not."""
    if expect.error_type and type(error).__name__ != expect.error_type \
            and expect.error_type not in [c.__name__ for c in type(error).__mro__]:
        return f"expected {expect.error_type}, got {type(error).__name__}: {error}"
    if expect.match and not re.search(expect.match, str(error)):
        return f"{type(error).__name__} message does not match /{expect.match}/: {error}"
    if expect.argument is not None and getattr(error, "argument", None) != expect.argument:
        return f"expected the error at argument {expect.argument}, got argument {getattr(error, 'argument', None)}: {error}"
    if expect.param is not None and getattr(error, "param", None) != expect.param:
        return f"expected the error on parameter '{expect.param}', got {getattr(error, 'param', None)!r}: {error}"
    return None


def judge(expect: Expectation, verdicts: list[OracleVerdict], error: Exception | None) -> tuple[str, str]:
    state, message = observed_state(verdicts, error)
    if isinstance(error, EngineInternalError) and (expect.kind in ("pass", "unsupported") or (
            expect.kind == "error" and expect.error_type != "EngineInternalError")):
        return State.ERROR, str(error)           # an engine bug is never an expected refusal
    if expect.kind == "pass":
        if isinstance(error, UnsupportedError):
            return State.ERROR, f"unexpectedly unsupported: {error}"
        return state, message
    if expect.kind == "error":
        if error is None:
            return State.FAIL, f"expected {expect.error_type} but the run succeeded ({message})"
        why = error_matches(expect, error)
        return (State.PASS, f"raised as expected: {type(error).__name__}: {error}") if why is None else (State.FAIL, why)
    if expect.kind == "unsupported":
        if not isinstance(error, UnsupportedError):
            got = f"{type(error).__name__}: {error}" if error else f"success ({message})"
            return State.FAIL, f"expected UnsupportedError, got {got}"
        if expect.match and not re.search(expect.match, str(error)):
            return State.FAIL, f"UnsupportedError message does not match /{expect.match}/: {error}"
        return State.UNSUPPORTED, f"refused as expected: {error}"
    if expect.kind == "xfail":
        if state in BUG_STATES:
            if expect.crash:          # judged here, the process survived: the known crash did not happen
                return State.FAIL, (f"expected the known bug ({expect.reason}) to kill the process running the run, "
                                f"but it survived with {state}: {message}")
            if expect.state and state != expect.state:    # the known bug must show as its own state
                return State.FAIL, f"expected the known bug ({expect.reason}) to show as {expect.state}, got {state}: {message}"
            return State.XFAIL, f"known bug ({expect.reason}): {message}"
        return State.XPASS, f"expected to fail ({expect.reason}) but every oracle holds"
    raise ValueError(f"unknown expectation {expect.kind}")


# ----------------------------------------------------------------------------- jobs and PTX

def job_matches(pattern: dict, job: JobRecord, by_id: dict[int, JobRecord]) -> bool:
    parent = by_id.get(job.parent) if job.parent is not None else None
    for key, want in pattern.items():
        if key == "function" and job.function != want:
            return False
        if key == "mode" and job.mode != want:
            return False
        if key == "kernel" and job.kernel != bool(want):
            return False
        if key == "parent" and (parent is None or parent.function != want):
            return False
        if key == "target":
            if want == "same-as-parent":
                if parent is None or parent.target != job.target or parent.config != job.config:
                    return False
            elif job.target != want:
                return False
        if key == "config" and any(job.config.get(k) != v for k, v in want.items()):
            return False
    return True


def check_jobs(patterns, jobs: list[JobRecord]) -> OracleVerdict:
    by_id = {j.id: j for j in jobs}
    missing = [p for p in patterns if not any(job_matches(p, j, by_id) for j in jobs)]
    recorded = "; ".join(f"{j.function}/{j.mode}@{j.target}" + (f"<-{j.parent_function}" if j.parent_function else "")
                         for j in jobs) or "none"
    if missing:
        return OracleVerdict("jobs", "fail", f"no recorded job matches {missing}; recorded: {recorded}")
    return OracleVerdict("jobs", "pass", f"{len(patterns)} job pattern(s) matched; recorded: {recorded}")


def check_ptx(assertions: dict, mode: str, facts_by_kernel: dict, kernel_name: str) -> OracleVerdict:
    facts = facts_by_kernel.get(f"{kernel_name}__{mode}", {})
    wanted = (assertions or {}).get(mode)
    if not wanted:
        return OracleVerdict("ptx", "pass", f"compiled to PTX for sm_90 ({len(facts_by_kernel)} kernel(s))",
                             metrics=dict(facts))
    bad = []
    for fact, want in wanted.items():
        got = facts.get(fact)
        if got is None:
            bad.append(f"unknown PTX fact '{fact}'")
        elif isinstance(want, dict):
            if "max" in want and got > want["max"]:
                bad.append(f"{fact} = {got} > max {want['max']}")
            if "min" in want and got < want["min"]:
                bad.append(f"{fact} = {got} < min {want['min']}")
        elif got != want:
            bad.append(f"{fact} = {got}, expected {want}")
    if bad:
        return OracleVerdict("ptx", "fail", f"{mode} kernel PTX: " + "; ".join(bad), metrics=dict(facts))
    return OracleVerdict("ptx", "pass", f"{mode} kernel PTX: " + ", ".join(f"{k}={facts.get(k)}" for k in wanted),
                         metrics=dict(facts))
