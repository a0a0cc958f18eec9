"""Fault isolation for the Warp and Taichi adapters (docs/engines.md, "Faults").

A CUDA fault inside Warp's or Taichi's code (an illegal address, a failed launch) is sticky: it
leaves the process's CUDA context unusable, and every later run in that process errors. On the H200
four Taichi faults turned 113 runs into ERRORs and 42 into XFAILs. So on the cuda backend each
adapter run runs in a child process of its own (`python -m harness.execution.isolated`, the machinery of the
runs that expect a KernelFaultError), and a fault becomes ONE record for the run that caused it:

- the child reports the run and its error names a device fault: ERROR "fault: <error> (...)",
  never an expected failure (a strict xfail stands for a wrong derivative, not a dead context);
- the child dies (segfault, abort, `terminate called ...`): ERROR "fault: the process running
  this run died with SIGSEGV ..." with the end of its stderr.

`HARNESS_ISOLATE_ENGINES` chooses: `auto` (default: isolate on cuda only), `1` (always, also on the
CPU: the tests plant faults this way), `0` (never; a fault then poisons its process as before).

`HARNESS_PLANT_ENGINE_FAULT=<kind>:<kernel>[,...]` plants a fault in every adapter launch of the
kernel named <kernel>, so that isolation can be tested without a GPU: `sticky` raises an illegal-address
error now and in every later adapter launch of the process (a dead context), `segfault` and `abort`
kill the process.
"""
from __future__ import annotations

import os
import signal

from harness.model import ErrorRecord, Outcome
from harness.policy import State

ISOLATE_ENV = "HARNESS_ISOLATE_ENGINES"
PLANT_ENV = "HARNESS_PLANT_ENGINE_FAULT"
OUTCOME_MARK = "HARNESS-ISOLATED-OUTCOME "     # the child's result line (Warp and Taichi print too)
FAULT_CATEGORY = "fault"

# How CUDA's sticky errors read in cupy's, numba's, Warp's and Taichi's messages.
_FAULT_WORDS = ("ILLEGAL_ADDRESS", "IllegalAddress", "illegal memory access", "LAUNCH_FAILED", "LaunchFailure",
                "unspecified launch failure", "MISALIGNED", "Misaligned", "misaligned address",
                "ILLEGAL_INSTRUCTION", "IllegalInstruction", "illegal instruction", "device-side assert",
                "CUDA_ERROR_ASSERT", "cudaErrorAssert")


def isolate_engine_runs(backend_name: str) -> bool:
    """Whether adapter runs on this backend run in a child process each."""
    value = os.environ.get(ISOLATE_ENV, "auto").strip().lower()
    if value not in ("auto", "0", "1"):
        raise ValueError(f"{ISOLATE_ENV}={value!r}: use auto (isolate on cuda), 1 (always) or 0 (never)")
    return value == "1" or (value == "auto" and backend_name == "cuda")


def fault_text(error: ErrorRecord | None) -> str | None:
    """The device fault an error names, or None."""
    if error is None:
        return None
    text = f"{error.type}: {error.message}"
    return text if any(w in text for w in _FAULT_WORDS) else None


def judge_engine_fault(engine: str, outcome: Outcome, expect_state: str | None = None) -> None:
    """An adapter run whose error is a device fault is ERROR with category `fault`, whatever the
    case expected (an xfail of a wrong derivative does not cover a dead CUDA context). Likewise an
    engine's xfail does not cover an exception of the run (an adapter's crash would hide behind the
    known bug), unless the xfail states ERROR."""
    if engine == "bundled":
        return
    text = fault_text(outcome.error)
    if text is None:
        if outcome.state == State.XFAIL and outcome.error is not None and expect_state != State.ERROR:
            outcome.state = State.ERROR
            outcome.message = (f"{outcome.error.type}: {outcome.error.message.strip()[:300]} (an exception, "
                               f"not the known wrong derivative the {engine} xfail stands for)")
        return
    outcome.state = State.ERROR
    outcome.error.category = FAULT_CATEGORY
    first = text.strip().splitlines()[0] if text.strip() else text
    outcome.message = (f"fault: {first} ({engine}, {outcome.mode} run; the device context of the process that "
                       "ran it is unusable after this)")


def child_death(outcome: Outcome, engine: str, returncode: int, stderr: str) -> Outcome:
    """The record of an isolated run whose process died before it reported."""
    if returncode < 0:
        try:
            how = f"{signal.Signals(-returncode).name} (signal {-returncode})"
        except ValueError:
            how = f"signal {-returncode}"
    else:
        how = f"exit status {returncode} and no result"
    tail = "\n".join(line for line in stderr.strip().splitlines()[-12:])
    named = fault_text(ErrorRecord("stderr", tail))
    message = (f"fault: the process running this {engine} {outcome.mode} run died with {how}"
               + (f"; it reported {named.splitlines()[-1].strip()}" if named else "")
               + "; later runs ran in fresh processes")
    outcome.state = State.ERROR
    outcome.message = message
    outcome.error = ErrorRecord("EngineProcessDied", message + (f"\nstderr ends:\n{tail}" if tail else ""),
                                category=FAULT_CATEGORY)
    return outcome


def expected_death(outcome: Outcome, expect) -> Outcome:
    """A dead child's record judged against a known crash (an xfail with `crash: true`): XFAIL,
    whatever signal ended it; any other expectation keeps the ERROR."""
    if expect.kind == "xfail" and expect.crash:
        outcome.state = State.XFAIL
        outcome.message = f"known bug ({expect.reason}): {outcome.message.removeprefix('fault: ')}"
    return outcome


# ----------------------------------------------------------------------------- planted faults (tests)

_sticky: str | None = None       # process-wide on purpose: a planted fault poisons the process, as a real one does


def planted_fault(kernel_name: str) -> None:
    """Raise or die as HARNESS_PLANT_ENGINE_FAULT asks (nothing when it is unset)."""
    global _sticky
    if _sticky:
        raise RuntimeError(_sticky)
    plants = dict(reversed(p.split(":", 1)) for p in os.environ.get(PLANT_ENV, "").split(",") if ":" in p)
    kind = plants.get(kernel_name)
    if kind is None:
        return
    if kind == "sticky":
        _sticky = (f"CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered "
                   f"(planted by {PLANT_ENV} in {kernel_name}; the context stays unusable)")
        raise RuntimeError(_sticky)
    if kind == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "abort":
        os.abort()
    raise ValueError(f"{PLANT_ENV}: {kind!r} for {kernel_name}: use sticky:<kernel>, segfault:<kernel> or "
                     "abort:<kernel> (comma-separated)")
