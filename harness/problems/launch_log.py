"""What the gradient oracles' derivative launches showed besides J v and J^T w.

The oracles see a DiffProblem (dicts in, dicts out). The gradient strategy hands them a LaunchLog
around its KernelProblem instead: the log forwards every call and folds each DerivativeLaunch the
adapter returns into values the strategy reads afterwards (the primal-state and batch-lane errors,
each mode's latest LaunchResult, the first results the activity relations reuse). The log belongs
to one run; the adapter stays pure.
"""
from __future__ import annotations

from harness.problems.kernel import DerivativeLaunch
from harness.oracles.arrays import max_abs

HISTORY = 2          # first derivative results kept per mode for the relations (they use at most two)


def primal_state_error(finals: dict, expected: dict, skip: set[str] = frozenset()) -> float:
    """Largest difference of a derivative launch's primal arrays from a primal launch's, relative
    to max(1, the largest primal value)."""
    err = 0.0
    for name, want in expected.items():
        if name in skip or name not in finals:
            continue
        scale = max(1.0, max_abs(want))
        err = max(err, max_abs(finals[name] - want) / scale)
    return err


def lane_error(lanes: list[dict]) -> float:
    """Batch lanes seeded with (j + 1) times one direction: the largest relative deviation of lane
    j from lane 0 scaled by (j + 1)."""
    err = 0.0
    for j, lane in enumerate(lanes[1:], start=1):
        for name, val in lane.items():
            ref = lanes[0][name] * (j + 1)
            scale = max(1e-30, max_abs(ref))
            err = max(err, max_abs(val - ref) / scale)
    return err


class LaunchLog:
    """A DiffProblem that forwards to `problem` and keeps what its derivative launches returned.

    `primal_reference`: the primal arrays a primal launch leaves (a relation's variant passes its
    parent's); None launches the primal once, at the first derivative launch. `history_modes`:
    the modes whose first results are kept for the relations (a run's own mode is enough)."""

    def __init__(self, problem, primal_reference: dict | None = None, history_modes=("forward", "reverse")):
        self.problem = problem
        self.xp = getattr(problem, "xp", None)
        self.writes_seeds = getattr(problem, "writes_seeds", True)
        self.fresh_results = getattr(problem, "fresh_results", False)
        self.inputs, self.outputs, self.dtype = problem.inputs, problem.outputs, problem.dtype
        self.fd_precision = getattr(problem, "fd_precision", None)
        self.width = getattr(problem, "width", 1)
        self._reference = primal_reference
        self.primal_state_error = 0.0     # derivative launches' primal arrays vs the primal launch
        self.lane_error = 0.0             # batch lanes vs lane 0 scaled
        self.latest: dict[str, object] = {}                  # mode -> its latest LaunchResult
        self.last = None                                     # the latest LaunchResult of any mode
        self.history: list[tuple[str, dict, dict]] = []      # (mode, seed, lane-0 result), the first of each mode
        self.history_modes = tuple(history_modes)            # only those a relation will read: memory

    # ------------------------------------------------------------------ the DiffProblem protocol
    def base_point(self) -> dict:
        return self.problem.base_point()

    def primal64(self, state: dict) -> dict:
        return self.problem.primal64(state)

    def primal_native(self, state: dict) -> dict:
        return self.problem.primal_native(state)

    def jvp(self, tangent: dict) -> dict:
        return self.record(self.problem.derivative("forward", tangent)).result

    def vjp(self, cotangent: dict) -> dict:
        return self.record(self.problem.derivative("reverse", cotangent)).result

    # ------------------------------------------------------------------ folding results in
    def primal_reference(self) -> dict:
        if self._reference is None:
            self._reference = self.problem.primal_finals()
        return self._reference

    def primal_repeats(self, tolerance: float) -> bool:
        """Whether a second primal launch leaves what the first left: when it does not (threads
        take slots in arrival order), a derivative launch's differing primal is the kernel's
        nondeterminism, not another program."""
        again = self.problem.primal_finals()
        return primal_state_error(again, self.primal_reference(), skip=self._no_need()) <= tolerance

    def _no_need(self) -> set[str]:
        return {a.spec.name for a in self.problem.args if a.spec.activity == "duplicated_no_need"}

    def record(self, launch: DerivativeLaunch) -> DerivativeLaunch:
        self.latest[launch.mode] = self.last = launch.launch
        if launch.primal_finals is not None:
            err = primal_state_error(launch.primal_finals, self.primal_reference(), skip=self._no_need())
            self.primal_state_error = max(self.primal_state_error, err)
        self.lane_error = max(self.lane_error, lane_error(launch.lanes))
        if launch.mode in self.history_modes and sum(m == launch.mode for m, _, _ in self.history) < HISTORY:
            self.history.append((launch.mode, launch.given, launch.result))
        return launch
