"""Gradient oracles: finite differences, forward/reverse consistency, the zero guard, localization.

They see only a `DiffProblem` (dicts of float64 arrays keyed by argument name) and return
`harness.model.OracleVerdict` records; see docs/oracles.md.
"""
from harness.oracles.checks import (
    DOT, FD_FORWARD, FD_REVERSE, NONFINITE_MESSAGE, ZERO, ZERO_MESSAGE, check_dot, check_forward_fd,
    check_reverse_fd, check_zero, localize, run_gradient_oracles,
)
from harness.oracles.fd import (
    CENTRAL_STEP, LARGE_STEP, base_state, central_difference, fd_jvp, fd_jvp_large_step,
    fd_jvp_richardson, make_cotangent, make_directions, step_size,
)
from harness.oracles.problem import DiffProblem, StateVar, entry_names, flatten, unflatten
from harness.oracles.tolerance import (
    DEFAULT_TOLERANCES, Comparison, Tolerance, compare_dots, compare_vectors, default_tolerance,
    dot_scale, dot_tolerance, resolve_tolerance,
)

__all__ = [
    "DiffProblem", "StateVar", "entry_names", "flatten", "unflatten",
    "Tolerance", "DEFAULT_TOLERANCES", "default_tolerance", "resolve_tolerance", "Comparison",
    "compare_vectors", "compare_dots", "dot_tolerance", "dot_scale",
    "CENTRAL_STEP", "LARGE_STEP", "make_directions", "make_cotangent", "base_state", "step_size",
    "central_difference", "fd_jvp", "fd_jvp_richardson", "fd_jvp_large_step",
    "FD_FORWARD", "FD_REVERSE", "DOT", "ZERO", "ZERO_MESSAGE", "NONFINITE_MESSAGE",
    "check_forward_fd", "check_reverse_fd", "check_dot", "check_zero", "localize", "run_gradient_oracles",
]
