"""What a case expects of each engine (docs/engines.md, "Expectations").

A case's `expect` describes the bundled engine. For another engine:
- `engines: {warp: {expect: ...}}` in the case decides, when given (a known upstream bug as a
  strict xfail with its link, so a fixed release shows as XPASS; an xfail covers the derivative
  runs, the case's primal runs still expect a pass);
- a variant that sets bundled engine options (`engine:`) is not run: the options are that engine's;
- a case expecting a KernelFaultError is not run: Warp and Taichi check no bounds on the CPU, and an
  out-of-bounds store would take the test process down with it;
- `expect: unsupported` becomes `pass`: the bundled engine's refusal says nothing about another
  engine, and the derivative has a right answer that the oracles check;
- a case that gives only native kernels (`engines: {warp: {kernel: ...}}`, no `kernel`) is not run
  on an engine without one of its own: there is no numba.cuda kernel;
- everything else (pass, error on the launch contract such as an ActivityError, an xfail for a
  kernel's own nondeterminism) holds for every engine.
An adapter's own refusal of a run expected to pass is the UNSUPPORTED state (`judge_engine_refusal`).
"""
from __future__ import annotations

from dataclasses import replace

from harness.core.errors import UnsupportedError
from harness.model import Case, Expectation
from harness.policy import State


def expectation_for(case: Case, engine: str, mode: str | None = None) -> tuple[Expectation, str | None]:
    """The expectation of `case` for `engine` (in `mode`), and a reason to skip the run (or None)."""
    if case.kernel_for(engine) is None:
        return case.expect, (f"the case gives only native kernels ({', '.join(sorted(case.native))}): "
                             f"no numba.cuda kernel for {engine} to run")
    if engine in case.engine_expect:
        stated = case.engine_expect[engine]
        if isinstance(stated, dict):           # keyed by mode (every mode the case runs)
            stated = stated.get(mode) or next(iter(stated.values()))
        if stated.kind == "xfail" and mode == "primal":
            return Expectation(kind="pass"), None     # a known AD bug: the primal run differentiates nothing
        return stated, None
    if engine == "bundled":
        return case.expect, None
    if case.engine:
        return case.expect, (f"engine options {sorted(case.engine)} configure the bundled engine; "
                             f"{engine} has none")
    if case.expect.kind == "error" and case.expect.error_type == "KernelFaultError":
        return case.expect, (f"{engine} checks no bounds on the CPU: the out-of-bounds store would crash "
                             "the test process, not raise")
    if case.expect.kind == "unsupported":
        return Expectation(kind="pass"), None
    return case.expect, None


def case_for(case: Case, engine: str, mode: str | None = None) -> tuple[Case, str | None]:
    expect, skip = expectation_for(case, engine, mode)
    if expect is case.expect:
        return case, skip
    links = case.links + ((expect.link,) if expect.link and expect.link not in case.links else ())
    return replace(case, expect=expect, links=links), skip


def judge_engine_refusal(engine: str, expect: Expectation, error, state: str, message: str) -> tuple[str, str]:
    """An adapter that refuses a run expected to pass (or to show a kernel's own bug): UNSUPPORTED
    with its reason, not an ERROR (the compatibility report's cell for a construct the engine cannot
    express). Likewise a run expected to raise another error that the adapter refuses before it gets
    there: the launch contract's checks (ActivityError, ...) run before any refusal, so what is left
    is an error of a construct the adapter cannot express at all (the bundled engine's nested-AD
    aliasing check inside device-side autodiff)."""
    if engine == "bundled" or not isinstance(error, UnsupportedError):
        return state, message
    if expect.kind in ("pass", "xfail") or (expect.kind == "error" and state != State.PASS):
        return State.UNSUPPORTED, f"{engine} cannot run this: {error}"
    return state, message
