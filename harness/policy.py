"""The harness's policy in one place: what a run's state means and the default tolerances.

Everything that judges or counts runs reads these sets (the runner, the pytest plugin, the
verdicts, the mutation campaign, the report's comparison with a baseline), so they cannot
disagree. Everything that compares numbers without a case's own tolerance reads the defaults here.
This module imports nothing from the harness.
"""
from __future__ import annotations

from enum import StrEnum

# ----------------------------------------------------------------------------- run sizes

# A case (or variant) tagged so is sized for a GPU: the simulator, which runs each thread as a Python
# thread, would take many minutes over it (public-numba-benchmark-nbody's reverse ran past the 300-s
# launch limit there). Its runs are SKIP on the simulator, with this reason, and run on the PTX tier
# and the GPU as any other.
GPU_SCALE_TAG = "gpu-scale"
GPU_SCALE_REASON = (f"tagged {GPU_SCALE_TAG}: sized for a GPU, it would take many minutes on the simulator; "
                    "it runs on the ptx tier and on cuda")

# ----------------------------------------------------------------------------- run states


class State(StrEnum):
    """A run's state. A str enum: each state is its own name, so results files, the report and
    JSON write it as before and a state read back from them (a plain string) compares equal."""
    PASS = "PASS"
    FAIL = "FAIL"
    ZERO = "ZERO"
    NONDET = "NONDET"
    ERROR = "ERROR"
    XFAIL = "XFAIL"
    XPASS = "XPASS"
    UNSUPPORTED = "UNSUPPORTED"
    SKIP = "SKIP"


STATES = tuple(State)

# A green run: pytest passes it (XFAIL and SKIP as pytest's own xfail and skip).
PASSING = frozenset({State.PASS, State.XFAIL, State.UNSUPPORTED, State.SKIP})
# A run that needs a reader's attention: pytest fails it (XPASS only when the xfail is strict), the
# comparison with a baseline counts it as a new failure, the mutation campaign as a catch.
FAILING = frozenset({State.FAIL, State.ZERO, State.NONDET, State.ERROR, State.XPASS})
# What a known bug (expect: xfail) may show as: a state the oracles or an error produce.
BUG_STATES = frozenset({State.FAIL, State.ZERO, State.NONDET, State.ERROR})
# A failing run that turns into one of these in the next run set is "newly fixed".
FIXED = frozenset({State.PASS, State.XFAIL})
# Runs a report lists compactly (nothing to read but the state).
QUIET = frozenset({State.PASS, State.SKIP})

# Across the releases of an engine (harness/releases): a run's derivative is right in a release when it
# passes, or passes although the case expects a known bug (XPASS: that release does not have it); it is
# wrong when a bug shows (a failing state, or the expected bug itself). UNSUPPORTED and SKIP say
# nothing about the derivative: a release that cannot run a case neither fixes nor breaks it.
RELEASE_RIGHT = frozenset({State.PASS, State.XPASS})
RELEASE_WRONG = BUG_STATES | {State.XFAIL}

# A failing oracle maps to its own state: most GPU AD bugs are silent zeros or races. Listed by
# rank: NONDET outranks ZERO, which outranks a plain FAIL (a result that changes from launch to
# launch makes every finite-difference comparison, the zero guard's too, meaningless).
ORACLE_STATES = {"nondet": State.NONDET, "zero": State.ZERO}

assert PASSING | FAILING == set(STATES) and not PASSING & FAILING


def pytest_result(state: str, strict: bool = True, engine: str = "bundled") -> str:
    """How pytest shows a run: 'passed', 'xfailed', 'skipped' or 'failed'. A non-strict xfail that
    passes (XPASS) passes. A refusal by an adapter (Warp, Taichi, an engine from another package)
    is a skip: that engine did not run the case, so pytest's counts match the harness's; the
    bundled engine's refusal asserts an expected refusal (a case's `expect: unsupported`) and passes."""
    if state == State.XFAIL:
        return "xfailed"
    if state == State.SKIP or (state == State.UNSUPPORTED and engine != "bundled"):
        return "skipped"
    if state in PASSING or (state == State.XPASS and not strict):
        return "passed"
    return "failed"


def is_new_failure(before: str | None, after: str) -> bool:
    """A run that fails now and did not before (or did not exist)."""
    return after in FAILING and (before is None or before not in FAILING)


def is_fixed(before: str, after: str) -> bool:
    return before in FAILING and after in FIXED


def catches(base: str, mutant: str) -> bool:
    """A planted bug is caught by a run it moves from a passing state to a failing one."""
    return base in PASSING and mutant in FAILING


# ----------------------------------------------------------------------------- tolerances

# Gradient oracles (finite differences, the dot test, the zero guard), per dtype: an entry passes when
# |ad - ref| <= atol + rtol * (|ref| + rms(ref)) (docs/oracles.md). float32 rtol 2e-3 is about 1.7e4
# float32 epsilons: room for reordered sums and moderate cancellation, while a factor-2, sign or zero
# error is still 500x over it. A case's `check: {fd: {rtol, atol}}` overrides either.
GRADIENT_RTOL_ATOL = {
    "float64": (1e-6, 1e-9),
    "float32": (2e-3, 1e-5),
}
# The same computation twice (derivative launches' primal arrays against a primal launch, batch lanes
# against separate directions, repeated launches): only the order of floating-point sums may differ.
REPEAT_RTOL = {"float32": 1e-5, "float64": 1e-12}
# Two activity variants of one derivative: the hierarchical reduction of an Active scalar against
# per-thread atomics sums in a different order, so float64 gets a little more room than REPEAT_RTOL.
RELATION_RTOL = {"float32": 1e-5, "float64": 1e-10}

# A primal launch against an independent reference (numpy for broadcast/map, numba.cuda.jit for
# kernels): the same arithmetic, except that numpy evaluates f in float64 and either
# side may contract a*b+c into an FMA. A wrong index or operand is off by O(1), far beyond these.
PRIMAL_REFERENCE_RTOL_ATOL = {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}


def repeat_rtol(dtype: str | None) -> float:
    return REPEAT_RTOL.get(str(dtype), REPEAT_RTOL["float64"])


def relation_rtol(dtype: str | None) -> float:
    return RELATION_RTOL.get(str(dtype), RELATION_RTOL["float64"])


# ----------------------------------------------------------------------------- where states live

# On a device backend, a problem whose arrays hold at most this many elements in all (counted over
# distinct allocations) keeps the oracles' states, comparisons, FD probes and the relations in numpy
# and copies its arrays to the device around each kernel launch (harness/problems/host_staging.py): a cupy
# operation costs a launch and a synchronisation (about 10 us, and a cupy compile in an empty
# cache) where numpy on a few thousand elements costs about 1 us. Above it, a state-sized host
# round trip per launch costs more than the operations, so the states stay on the device. At 2^16
# float64 elements one numpy pass (0.5 MB) and one copy each way cost about as much as a few cupy
# launches: the break-even region.
HOST_STATE_LIMIT = 1 << 16

# ----------------------------------------------------------------------------- finite differences

# Random tangent directions the finite-difference oracle checks when the case does not say
# (`check: {fd: {directions: N}}`); the loader's FDSpec default reads this.
FD_DIRECTIONS = 2
# With `check: {fd: false}` the gradient oracles still draw this many directions (for the dot test
# and the zero guard) until the case format honours the switch (harness.execution.strategies.GradientCheck).
FD_DIRECTIONS_WITHOUT_FD = 1
