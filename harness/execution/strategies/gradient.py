"""A forward or reverse run: the gradient oracles (finite differences, dot test, zero guard), the
primal-state and batch-lane checks, the activity relations and the nondeterminism oracle."""
from __future__ import annotations

import numpy as np

from harness import policy
from harness.adapters.native import is_native
from harness.checks.batch_lanes import lane_verdict
from harness.checks.primal_reference import NOT_JUDGED
from harness.checks.stated_values import gradient_values_verdict
from harness.cases.inputs import HostArg
from harness.model import ArraySpec, OracleVerdict
from harness.execution.strategies.base import GradientCheck, RunContext


class Gradient:
    name = "gradient"

    def verdicts(self, ctx: RunContext) -> list[OracleVerdict]:
        from harness.problems.kernel import KernelProblem
        from harness.problems.launch_log import LaunchLog
        from harness.oracles import run_gradient_oracles
        case, mode = ctx.case, ctx.mode
        problem = KernelProblem(ctx.engine, ctx.kernel, ctx.config, ctx.args)
        log = LaunchLog(problem, history_modes=(mode,))   # what the oracles' derivative launches returned
        check = GradientCheck.from_check(case.check)
        chosen = chosen_shadows(ctx.args)
        # One derivative launch first: an engine's refusal decides the run before any primal is
        # compared (a case may expect it; the primal of a kernel whose barrier only some threads
        # reach faults on the simulator, and a racy kernel's primal differs on a GPU run to run).
        log.record(problem.derivative(mode, {}))
        primal = self._primal_first(ctx, problem, log)
        if primal is not None and primal.verdict == "fail":
            return [primal]          # the derivative of another program than the kernel: not judged
        state = primal_state_verdict(log.primal_state_error, problem.dtype)
        if state.verdict == "fail" and log.primal_repeats(policy.repeat_rtol(problem.dtype)):
            # the derivative kernel computes another primal than the primal launch, which repeats
            # itself: finite differences of the one and AD of the other say nothing about the
            # derivative (a kernel whose primal changes launch to launch goes on to the oracles)
            state.message += (f", {NOT_JUDGED}: one of the two launches computes another program than the "
                              "kernel (the engine's primal in its derivative kernel, or the compiler: compare "
                              "both with --backend sim)")
            if log.latest.get(mode) is not None:        # its generated source goes with the verdict
                ctx.record_launch(log.latest[mode], mode)
            return ([primal] if primal is not None else []) + [state]
        with ctx.timed("oracles_s"):
            verdicts = run_gradient_oracles(log, mode, **check.oracle_kwargs(
                rng=np.random.default_rng(case.seed + 1), first=chosen))
            stated = gradient_values_verdict(case, mode, log, chosen)    # check.values
            if stated is not None:
                verdicts.append(stated)
        own = log.latest.get(mode)                # not the other mode's, run by the dot test
        if own is not None:
            ctx.record_launch(own, mode)
        verdicts.append(primal_state_verdict(log.primal_state_error, problem.dtype))
        if problem.width > 1:
            verdicts.append(lane_verdict(log.lane_error, problem.dtype, problem.width))
        else:
            verdicts += self._synthesized_lanes(ctx, problem)
        verdicts += self._relations(ctx, problem, check, log.history)
        verdicts += self._active_sum(ctx, problem)
        verdicts += self._nondet(ctx, problem)
        return ([primal] if primal is not None else []) + verdicts

    def _primal_first(self, ctx: RunContext, problem, log) -> OracleVerdict | None:
        """The engine's primal against numba's own launch of the kernel, before any derivative is
        judged (harness/checks/primal_reference.py). Kernel-style cases only: broadcast and map runs check
        their primal against numpy in their primal runs; a native Warp or Taichi kernel has no
        numba.cuda twin to launch."""
        if ctx.case.launch.style in ("broadcast", "map") or is_native(ctx.kernel):
            return None
        from harness.checks.primal_reference import primal_first_verdict
        with ctx.timed("primal_reference_s"):
            # tolerances of the precision the kernel computes in (problem.dtype: float32 for a
            # float64 run of a kernel that rounds to float32 inside), as every other oracle's
            return primal_first_verdict(ctx.kernel, ctx.config, problem, log.primal_reference(), ctx.backend,
                                        problem.dtype)

    def _relations(self, ctx: RunContext, problem, check: GradientCheck, history) -> list[OracleVerdict]:
        """the activity relations (always, where they apply) and the `activities: all`
        enumeration (when the case asks); see docs/activities.md."""
        from harness.checks.relations import activities_verdict, relation_verdicts
        case, out = ctx.case, []
        with ctx.timed("relations_s"):
            out += relation_verdicts(problem, ctx.mode, rng=np.random.default_rng(case.seed + 2),
                                     style=case.launch.style, known=history)
            if case.check.activities == "all":
                kwargs = check.oracle_kwargs()
                del kwargs["dot"], kwargs["fd"]
                out.append(activities_verdict(problem, ctx.mode, seed=case.seed, **kwargs))
        return out

    def _active_sum(self, ctx: RunContext, problem) -> list[OracleVerdict]:
        """An Active scalar's adjoint re-accumulated in float64 from forward mode: a second check,
        independent of rel-active, of the sum over threads (harness/checks/active_sum.py)."""
        from harness.checks.active_sum import active_sum_verdict
        with ctx.timed("active_sum_s"):
            verdict = active_sum_verdict(problem, ctx.mode, np.random.default_rng(ctx.case.seed + 4))
        if verdict is None:
            del ctx.outcome.timings["active_sum_s"]
            return []
        return [verdict]

    def _synthesized_lanes(self, ctx: RunContext, problem) -> list[OracleVerdict]:
        """A one-lane launch batched at width 2 with lanes v and 2 v: a second check, independent
        of rel-batch, that lanes stay apart (harness/checks/batch_lanes.py)."""
        from harness.checks.batch_lanes import synthesized_lane_verdict
        with ctx.timed("batch_lanes_s"):
            verdict = synthesized_lane_verdict(problem, ctx.mode, np.random.default_rng(ctx.case.seed + 5))
        if verdict is None:
            del ctx.outcome.timings["batch_lanes_s"]
            return []
        return [verdict]

    def _nondet(self, ctx: RunContext, problem) -> list[OracleVerdict]:
        from harness.checks.nondet import nondet_verdict
        case = ctx.case
        with ctx.timed("nondet_s"):
            nondet = nondet_verdict(problem, ctx.mode, repeat=case.check.repeat, block_sweep=case.check.block_sweep,
                                    case=case, engine=ctx.engine, args=ctx.args,
                                    rng=np.random.default_rng(case.seed + 3))
        if nondet is None:
            del ctx.outcome.timings["nondet_s"]
            return []
        return [nondet]


def chosen_shadows(args: list[HostArg]) -> dict | None:
    """The case's own shadow values (`shadow: {init: ...}`): the first direction or cotangent the
    gradient oracles check. A batch gives one shadow's worth or all of them; the first is used."""
    from harness.cases.inputs import init_array
    chosen = {}
    for a in args:
        init = (a.spec.shadow or {}).get("init")
        if init is None:
            continue
        shape = tuple(a.value.shape)
        spec = ArraySpec(shape, "float64", init)
        try:
            chosen[a.spec.name] = init_array(spec, np.random.default_rng(0))
        except ValueError:                    # width x shape values: take the first shadow
            values = np.asarray(init["values"], dtype=np.float64).reshape((-1,) + shape)
            chosen[a.spec.name] = values[0]
    return chosen or None


def primal_state_verdict(err: float, dtype: str) -> OracleVerdict:
    """`err`: the largest difference of a derivative launch's primal arrays from a primal launch's."""
    ok = err <= policy.repeat_rtol(dtype)
    return OracleVerdict("primal-state", "pass" if ok else "fail",
                         "derivative launches leave the primal arrays as a primal launch does" if ok else
                         f"derivative launch left primal arrays differing from a primal launch (rel err {err:.3g})",
                         metrics={"max_rel_err": err})
