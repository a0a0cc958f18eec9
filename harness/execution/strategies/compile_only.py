"""A tier that cannot launch (ptx): compile every kernel the run needs and check the PTX facts."""
from __future__ import annotations

from harness.model import OracleVerdict
from harness.execution.verdicts import check_ptx
from harness.execution.strategies.base import RunContext


class CompileOnly:
    name = "compile-only"

    def verdicts(self, ctx: RunContext) -> list[OracleVerdict]:
        from harness.backends.ptx import ptx_facts
        from harness.problems.kernel import KernelProblem
        engine, outcome = ctx.engine, ctx.outcome
        with ctx.timed("compile_s"):
            values = [a.value for a in ctx.args]
            plans = [engine.prepare(ctx.kernel, ctx.config, values, "primal")[0]]
            if ctx.mode != "primal":
                problem = KernelProblem(engine, ctx.kernel, ctx.config, ctx.args)
                plans.append(engine.prepare(ctx.kernel, ctx.config, problem.annotated(ctx.mode, values), ctx.mode)[0])
            for plan in plans:
                outcome.ptx[f"{plan.job.function}__{plan.mode}"] = ptx_facts(plan.ptx)
                if plan.source_path:
                    outcome.sources[plan.mode] = plan.source_path
            outcome.jobs = [j.record() for p in plans for j in p.job.tree()]
        return [check_ptx(ctx.case.ptx, ctx.mode, outcome.ptx, kernel_name=plans[-1].job.function)]
