"""What every run strategy gets (RunContext) and the one place the case's `check` becomes the
gradient oracles' settings (GradientCheck)."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from harness import policy
from harness.cases.inputs import HostArg
from harness.model import OracleVerdict, Outcome, Run


@dataclass
class RunContext:
    """One run, ready to launch: the runner has built the arguments, the engine and the launch."""
    run: Run
    backend: Any
    engine: Any                # an Engine, or a broadcast/map launcher around one
    kernel: Any                # the Python function the case names
    config: Any                # LaunchConfig
    args: list[HostArg]
    outcome: Outcome           # strategies record jobs, sources, ptx facts and timings here
    root: Any = None           # the project root (a program loads the kernels of its launches)

    @property
    def case(self):
        return self.run.case

    @property
    def mode(self) -> str:
        return self.run.mode

    @contextmanager
    def timed(self, key: str):
        """Record the seconds the block takes as outcome.timings[key]."""
        t0 = time.time()
        try:
            yield
        finally:
            self.outcome.timings[key] = time.time() - t0

    def record_launch(self, launch, source_mode: str) -> None:
        """Keep a launch's compile-job records and its generated source (under `source_mode`)."""
        self.outcome.jobs = [j.record() for j in launch.jobs]
        if launch.plan.source_path:
            self.outcome.sources[source_mode] = launch.plan.source_path


class Strategy(Protocol):
    name: str

    def verdicts(self, ctx: RunContext) -> list[OracleVerdict]: ...


@dataclass(frozen=True)
class GradientCheck:
    """The gradient oracles' settings, from the case's `check` (defaults: harness.policy)."""
    fd: bool                   # the case's `check: {fd: ...}` is not false
    directions: int
    rtol: float | None         # None: the per-dtype default (policy.GRADIENT_RTOL_ATOL)
    atol: float | None
    dot: bool
    zero_guard: bool

    @classmethod
    def from_check(cls, check) -> "GradientCheck":
        fd = check.fd
        return cls(fd=fd is not None,
                   directions=fd.directions if fd is not None else policy.FD_DIRECTIONS_WITHOUT_FD,
                   rtol=fd.rtol if fd is not None else None, atol=fd.atol if fd is not None else None,
                   dot=check.dot, zero_guard=check.zero_guard)

    def oracle_kwargs(self, **overrides) -> dict:
        """Keyword arguments for harness.oracles.run_gradient_oracles. `fd=False` (the case's
        `check: {fd: false}`) runs no finite differences: the FD check and the zero guard are
        skipped, the dot test still runs."""
        kwargs = dict(directions=self.directions, rtol=self.rtol, atol=self.atol, dot=self.dot,
                      zero_guard=self.zero_guard, fd=self.fd)
        kwargs.update(overrides)
        return kwargs
