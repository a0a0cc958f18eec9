"""Exact expected values stated by a case: for kinks, subgradients and custom
rules that finite differences cannot judge, a case says what the engine must produce.

Entry k passes when |got_k - expected_k| <= atol + rtol * (|expected_k| + rms(expected over the
same argument)), the vector rule of every gradient oracle (tolerance.py).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from harness.model import OracleVerdict
from harness.oracles.arrays import f64
from harness.oracles.problem import StateVar, entry_names
from harness.oracles.tolerance import Comparison, Tolerance, compare_vectors

VALUES = "values"
_WHAT = {"primal": "final values", "forward": "J v", "reverse": "J^T w"}


def expected_array(values, shape: tuple[int, ...]) -> np.ndarray:
    """A stated value as an array of `shape`: one number for every entry, a flat row-major list,
    or nested lists of the shape (the loader has checked the count)."""
    a = np.asarray(values, dtype=np.float64)
    if a.ndim == 0:
        return np.full(shape, float(a))
    return a.reshape(shape)


def check_expected_values(mode: str, got: Mapping[str, np.ndarray], expected: Mapping[str, object],
                          tol: Tolerance) -> OracleVerdict:
    """The engine's `got` (final values, J v or J^T w by argument name) against the stated values."""
    parts = []
    for name, values in expected.items():
        if name not in got:
            return OracleVerdict(VALUES, "fail", f"{mode}: the run produced no value for '{name}' "
                                 f"(produced: {', '.join(got) or 'none'})")
        ad = f64(got[name])
        ref = expected_array(values, ad.shape)
        names = entry_names([StateVar(name, tuple(ad.shape))])
        parts.append(compare_vectors(ad, ref, tol, names, label=name))
    comp = Comparison.concat(parts)
    metrics = {**comp.metrics(), "rtol": tol.rtol, "atol": tol.atol, "arguments": list(expected)}
    what = _WHAT.get(mode, "values")
    if comp.ok:
        return OracleVerdict(VALUES, "pass", f"{mode} {what} equal the case's expected values for "
                             f"{', '.join(expected)} (max |err| {comp.max_abs_err:.3g})", metrics, comp.worst())
    i = comp.worst_index()
    return OracleVerdict(VALUES, "fail",
                         f"{mode} {what} differ from the case's expected values at {comp.names[i]}: got "
                         f"{float(comp.ad[i]):.6g}, expected {float(comp.ref[i]):.6g} (|err| {float(comp.err[i]):.3g} > tol "
                         f"{float(comp.tol[i]):.3g}); {comp.n_bad} of {comp.n} entries outside tolerance",
                         metrics, comp.worst(only_bad=True))
