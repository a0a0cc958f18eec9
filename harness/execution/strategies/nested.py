"""A kernel that calls autodiff on the device, checked against finite differences of its own primal."""
from __future__ import annotations

import numpy as np

from harness.model import OracleVerdict
from harness.execution.strategies.base import GradientCheck, RunContext


class Nested:
    name = "nested"

    def verdicts(self, ctx: RunContext) -> list[OracleVerdict]:
        from harness.problems.launch_log import LaunchLog
        from harness.problems.nested import NestedProblem
        from harness.oracles import run_gradient_oracles
        case = ctx.case
        nested = case.check.nested
        specs = nested.get("args", {})
        pairs = {name: spec["shadow"] for name, spec in specs.items() if "shadow" in spec}
        adjoints = {name: spec["adjoint"] for name, spec in specs.items() if "adjoint" in spec}
        problem = NestedProblem(ctx.engine, ctx.kernel, ctx.config, ctx.args, pairs, nested.get("mode", "reverse"),
                                adjoints=adjoints)
        log = LaunchLog(problem)
        check = GradientCheck.from_check(case.check)
        with ctx.timed("oracles_s"):
            verdicts = run_gradient_oracles(log, problem.nested_mode,
                                            **check.oracle_kwargs(dot=False, rng=np.random.default_rng(case.seed + 1)))
        if log.last is not None:                       # the kernel's own launch (it is a primal one)
            ctx.record_launch(log.last, "primal")
        return [v for v in verdicts if v.verdict != "skip" or v.name != "dot"]
