"""Kernels that call helpers of another file (kernels/soundness_helpers.py): a refusal inside a
helper names the helper's file and line."""
from numba import cuda


def _helpers():
    """kernels/soundness_helpers.py, loaded by path (kernels/ is not a package)."""
    import importlib.util
    import pathlib
    spec = importlib.util.spec_from_file_location("soundness_helpers", pathlib.Path(__file__).with_name("soundness_helpers.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_h = _helpers()
log_gamma_of, sum_of_powers = _h.log_gamma_of, _h.sum_of_powers


def gamma_via_helper(out, x):
    """lgamma (no rule) inside a helper of another file."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = log_gamma_of(x[i]) * x[i]


def powers_via_helper(out, x, n):
    """A dynamic loop inside a helper of another file (its tape overflow names that file)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = sum_of_powers(x[i], n)
