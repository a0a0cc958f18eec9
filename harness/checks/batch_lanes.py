"""A second, independent check that a batched launch keeps its lanes apart (verdict `batch-lanes`).

An engine that folds BatchDuplicated lanes together (every lane's adjoint added into one lane's
shadow, a lane reading another lane's seed) is otherwise seen only by the `rel-batch` relation on a
case without batch arguments: finite differences and the dot test launch one lane. This check
shares nothing with that relation but the batched variant of the launch (`rel-batch` compares k
distinct directions with k Duplicated launches): it launches the variant once with lane j seeded
with (j + 1) times ONE direction, and derivatives are linear in their seed, so lane j must come out
as (j + 1) times lane 0, to the repeat tolerance; folded lanes come out equal (or empty) instead.

A case with batch arguments has this verdict already, from every derivative launch of its own
width (problems/launch_log.py, `lane_error`); here the case's differentiable arrays are batched at
width 2, as `rel-batch` does.
"""
from __future__ import annotations

import numpy as np

from harness import policy
from harness.core.errors import HarnessError
from harness.model import OracleVerdict
from harness.oracles.fd import make_cotangent, make_directions
from harness.problems.launch_log import lane_error

BATCH_LANES = "batch-lanes"
WIDTH = 2
_BATCHABLE = ("duplicated", "duplicated_no_need")


def lane_verdict(err: float, dtype: str, width: int) -> OracleVerdict:
    """`err`: the largest deviation of batch lane j from lane 0 times (j + 1)."""
    ok = err <= policy.repeat_rtol(dtype)
    return OracleVerdict(BATCH_LANES, "pass" if ok else "fail",
                         f"{width} shadow lanes seeded (j + 1) v come out (j + 1) times lane 0" if ok else
                         f"batch lanes disagree with lane 0 scaled (rel err {err:.3g})",
                         metrics={"max_rel_err": err, "width": width})


def synthesized_lane_verdict(problem, mode: str, rng: np.random.Generator) -> OracleVerdict | None:
    """The lanes of the width-2 batched variant of a one-lane launch, seeded (v, 2 v); None where
    the launch is batched already (its own launches are judged) or has no array to batch."""
    from harness.checks.relations import with_specs
    if mode not in ("forward", "reverse") or getattr(problem, "width", 1) > 1:
        return None
    batched = {a.spec.name: {"activity": "batch_duplicated", "width": WIDTH} for a in problem.args
               if a.spec.kind == "array" and a.spec.activity in _BATCHABLE}
    if not batched or not problem.inputs or not problem.outputs:
        return None
    seed = make_directions(problem, 1, rng)[0] if mode == "forward" else make_cotangent(problem, rng)
    try:
        lanes = with_specs(problem, batched).derivative(mode, seed).lanes
    except HarnessError as exc:               # an engine without batches (Warp, Taichi), a refused variant
        return OracleVerdict(BATCH_LANES, "skip", f"not checked: the width-{WIDTH} batched variant is refused: "
                             f"{type(exc).__name__}: {exc}")
    verdict = lane_verdict(lane_error(lanes), problem.dtype, WIDTH)
    verdict.message += f" (the case's arrays {', '.join(batched)} batched, lanes seeded v and 2 v)"
    return verdict
