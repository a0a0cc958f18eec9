"""A primal run: the kernel launches and completes; its results are checked against the case's
stated values (check.values.primal) where it gives them."""
from __future__ import annotations

from harness.checks.stated_values import primal_verdicts
from harness.adapters.native import is_native
from harness.problems.host_staging import HOST, keeps_on_host, staged_launch
from harness.problems.kernel import array_module
from harness.problems.layouts import device_view
from harness.model import OracleVerdict
from harness.execution.strategies.base import RunContext


class Primal:
    name = "primal"

    def verdicts(self, ctx: RunContext) -> list[OracleVerdict]:
        # small arrays on a device: launched staged, checked in numpy (harness/problems/host_staging.py)
        on_host = keeps_on_host(array_module(ctx.backend), [a.value for a in ctx.args if a.spec.kind == "array"])
        with ctx.timed("run_s"):
            roots: dict = {}                  # arguments sharing a buffer share it on the device
            values = [device_view(HOST if on_host else ctx.backend, a.value, roots) if a.spec.kind == "array"
                      else a.value for a in ctx.args]
            if on_host:
                result = staged_launch(ctx.engine, ctx.backend, ctx.kernel, ctx.config, values, "primal")
            else:
                result = ctx.engine.launch(ctx.kernel, ctx.config, *values, mode="primal")
            ctx.backend.synchronize()
            ctx.outcome.jobs = [j.record() for j in result.jobs]
        # a native Warp or Taichi kernel has no numba.cuda twin to launch as the primal reference
        reference = None if is_native(ctx.kernel) else ctx.kernel
        return [OracleVerdict("launch", "pass", "primal launch completed")] + \
            primal_verdicts(ctx.case, ctx.args, values, ctx.backend, reference, ctx.config, on_host=on_host)
