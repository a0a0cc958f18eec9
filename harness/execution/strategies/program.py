"""A run of a program: a case's `program:` of launches, or a single kernel
under the replay protocol (`replay:`), which is a program of one launch. Every mode and tier goes
here: the verdicts are the usual ones, over the whole program (harness/problems/program.py)."""
from __future__ import annotations

import numpy as np

from harness import policy
from harness.checks.stated_values import gradient_values_verdict, primal_values_verdict
from harness.core.errors import UnsupportedError
from harness.model import LaunchStep, OracleVerdict, ProgramSpec
from harness.problems.program import ProgramProblem
from harness.execution.strategies.base import GradientCheck, RunContext
from harness.execution.strategies.gradient import chosen_shadows


def program_of(case) -> ProgramSpec:
    if case.program is not None:
        return case.program
    if case.launch.style != "kernel":
        raise UnsupportedError(f"the replay protocol runs kernel launches; a {case.launch.style} launch "
                               "generates its kernel and is not available under replay")
    return ProgramSpec(steps=(LaunchStep(case.kernel, case.launch, tuple(a.name for a in case.args)),))


class Program:
    name = "program"

    def verdicts(self, ctx: RunContext) -> list[OracleVerdict]:
        run, case, engine, outcome, backend = ctx.run, ctx.case, ctx.engine, ctx.outcome, ctx.backend
        with ctx.timed("program_setup_s"):
            problem = ProgramProblem(engine, program_of(case), ctx.args, ctx.root, dtype=run.dtype,
                                     replay=case.replay, seed=case.seed)
        n = len(problem.launches)
        if not backend.can_launch:                         # compile-only tier: every launch compiles
            with ctx.timed("compile_s"):
                seen = self._compile(problem, engine, run.mode)
            return [OracleVerdict("ptx", "pass", f"compiled the {seen} distinct launch(es) of a {n}-launch program")]
        verdicts: list[OracleVerdict] = []
        chosen = chosen_shadows(ctx.args)
        with ctx.timed("oracles_s"):
            if run.mode == "primal":
                finals = problem.primal()
                verdicts.append(OracleVerdict("launch", "pass", f"the program's {n} launch(es) completed"))
                stated = primal_values_verdict(case, finals, problem.dtype)
            else:
                from harness.oracles import run_gradient_oracles
                check = GradientCheck.from_check(case.check)
                verdicts += run_gradient_oracles(problem, run.mode, **check.oracle_kwargs(
                    rng=np.random.default_rng(case.seed + 1), first=chosen))
                stated = gradient_values_verdict(case, run.mode, problem, chosen)
                if run.mode == "reverse":
                    verdicts.append(self._tape_verdict(case, problem, n))
            if stated is not None:
                verdicts.append(stated)
        if problem.last_launch is not None:
            outcome.jobs = [j.record() for j in problem.last_launch.jobs]
        return verdicts

    @staticmethod
    def _compile(problem: ProgramProblem, engine, mode: str) -> int:
        values, seen = problem._fresh(), set()
        for launch in problem.launches:
            key = (id(launch.kernel), launch.config)
            if key in seen:
                continue
            seen.add(key)
            engine.prepare(launch.kernel, launch.config, [values[b] for b in launch.step.args], "primal")
            if mode != "primal":
                engine.prepare(launch.kernel, launch.config,
                               problem._wrap(launch, values, problem._shadows({}), mode), mode)
        return len(seen)

    @staticmethod
    def _tape_verdict(case, problem: ProgramProblem, n: int) -> OracleVerdict:
        if case.replay is not None:
            restored = case.replay.get("restore")
            how = ("replay protocol: the primal ran first on the buffers, the reverse later"
                   + (f", {', '.join(restored)} restored before it" if restored else ""))
            tol = policy.repeat_rtol(problem.dtype)
            metrics = {"launches": n, "max_rel_err": problem.replay_error}
            if problem.replay_error > tol:
                return OracleVerdict("program", "fail", f"{how}; the reverse's re-execution wrote "
                                     f"{problem.replay_worst} differently from the primal (rel err "
                                     f"{problem.replay_error:.3g}): its gradient belongs to another computation "
                                     "(atomics handing out slots in another order?)", metrics=metrics)
            return OracleVerdict("program", "pass", f"{how}; the reverse's re-execution reproduced the primal's "
                                 "results", metrics=metrics)
        else:
            how = f"tape of launches: {problem.tape_entries} buffer version(s) recorded for {n} launch(es)"
        return OracleVerdict("program", "pass", how, metrics={"launches": n, "tape_entries": problem.tape_entries})
