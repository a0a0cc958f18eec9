"""Running a case whose computation is a program (issue 10 items 1 and 2): a `program:` of
launches, or a single kernel under the replay protocol (`replay:`), which is a program of one
launch. The runner hands such runs here; the verdicts are the usual ones, over the whole program.
"""
from __future__ import annotations

import time

import numpy as np

from .case_values import gradient_values_verdict, primal_values_verdict
from .errors import UnsupportedError
from .model import LaunchStep, OracleVerdict, ProgramSpec
from .program import ProgramProblem


def program_of(case) -> ProgramSpec:
    if case.program is not None:
        return case.program
    if case.launch.style != "kernel":
        raise UnsupportedError(f"the replay protocol runs kernel launches; a {case.launch.style} launch "
                               "generates its kernel and is not available under replay")
    return ProgramSpec(steps=(LaunchStep(case.kernel, case.launch, tuple(a.name for a in case.args)),))


def program_verdicts(backend, run, engine, args, outcome, root, chosen: dict | None) -> list[OracleVerdict]:
    case = run.case
    t0 = time.time()
    problem = ProgramProblem(engine, program_of(case), args, root, dtype=run.dtype, replay=case.replay,
                             seed=case.seed)
    n = len(problem.launches)
    outcome.timings["setup_s"] = time.time() - t0
    if not backend.can_launch:                             # compile-only tier: every launch compiles
        t0 = time.time()
        values = problem._fresh()
        seen = set()
        for launch in problem.launches:
            key = (id(launch.kernel), launch.config)
            if key not in seen:
                seen.add(key)
                engine.prepare(launch.kernel, launch.config, [values[b] for b in launch.step.args], "primal")
                if run.mode != "primal":
                    shadows = problem._shadows({})
                    engine.prepare(launch.kernel, launch.config, problem._wrap(launch, values, shadows, run.mode),
                                   run.mode)
        outcome.timings["compile_s"] = time.time() - t0
        return [OracleVerdict("ptx", "pass", f"compiled the {len(seen)} distinct launch(es) of a {n}-launch program")]
    verdicts: list[OracleVerdict] = []
    t0 = time.time()
    if run.mode == "primal":
        finals = problem.primal()
        verdicts.append(OracleVerdict("launch", "pass", f"the program's {n} launch(es) completed"))
        stated = primal_values_verdict(case, finals, problem.dtype)
        if stated is not None:
            verdicts.append(stated)
    else:
        from .oracles import run_gradient_oracles
        fd = case.check.fd
        verdicts += run_gradient_oracles(
            problem, run.mode, directions=fd.directions if fd else 1, rtol=fd.rtol if fd else None,
            atol=fd.atol if fd else None, dot=case.check.dot, zero_guard=case.check.zero_guard,
            rng=np.random.default_rng(case.seed + 1), first=chosen, fd=fd is not None)
        stated = gradient_values_verdict(case, run.mode, problem, chosen)
        if stated is not None:
            verdicts.append(stated)
        if run.mode == "reverse":
            how = ("replay protocol: the primal ran first on the buffers, the reverse later"
                   + (f", {', '.join(case.replay['restore'])} restored" if case.replay.get("restore") else "")
                   if case.replay is not None else
                   f"tape of launches: {problem.tape_entries} buffer version(s) recorded for {n} launch(es)")
            verdicts.append(OracleVerdict("program", "pass", how, metrics={"launches": n,
                                                                             "tape_entries": problem.tape_entries}))
    if problem.last_launch is not None:
        outcome.jobs = [j.record() for j in problem.last_launch.jobs]
    outcome.timings["oracles_s"] = time.time() - t0
    return verdicts
