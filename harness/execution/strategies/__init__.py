"""One strategy per kind of run: what is launched and which oracles judge it.

    compile-only  a tier that cannot launch (ptx): compile every kernel the run needs, check facts
    nested        a primal run of a kernel that differentiates on the device (check.nested)
    primal        a primal run: the launch completes
    gradient      a forward or reverse run: the gradient oracles, activity relations, nondeterminism
    program       a program of launches, or a kernel under the replay protocol, any mode

The runner builds a RunContext (arguments, engine, launch configuration) and hands it to the
strategy `strategy_for` picks; it judges the verdicts the strategy returns. To add a kind of run,
add a module here with a class that has `name` and `verdicts(ctx)`, and pick it in `strategy_for`.
"""
from __future__ import annotations

from harness.execution.strategies.base import GradientCheck, RunContext, Strategy
from harness.execution.strategies.compile_only import CompileOnly
from harness.execution.strategies.gradient import Gradient
from harness.execution.strategies.nested import Nested
from harness.execution.strategies.primal import Primal
from harness.execution.strategies.program import Program


def strategy_for(run, can_launch: bool) -> Strategy:
    if run.case.program is not None or run.case.replay is not None:
        return Program()                      # compiles on its own on a tier that cannot launch
    if not can_launch:
        return CompileOnly()
    if run.mode == "primal":
        return Nested() if run.case.check.nested else Primal()
    return Gradient()


__all__ = ["CompileOnly", "Gradient", "GradientCheck", "Nested", "Primal", "Program", "RunContext", "Strategy",
           "strategy_for"]
