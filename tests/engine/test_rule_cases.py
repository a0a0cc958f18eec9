"""The rule table against the cases, the docs and numba.cuda.

* every rule of harness/engine/rules/table.py is differentiated by at least one expected-to-pass case in
  cases/ in forward mode and in reverse mode (a wrong rule cannot pass the whole suite);
* docs/engine.md's rule list is the one harness/engine/rules/doc.py generates from the tables;
* every math function numba.cuda compiles in a kernel has a rule, carries no derivative, or is
  refused with a message naming its line.
"""
from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

from harness.engine.rules import doc as rules_doc
from harness.engine.rules.table import BOOLEAN, NO_RULE_MESSAGE, PARTIALS, PIECEWISE_CONSTANT
from harness.core.errors import UnsupportedError

ROOT = Path(__file__).resolve().parents[2]

# math.* functions numba-cuda 0.30 types in kernels (numba/cuda/cudamath.py), for when its source
# cannot be read; the test below also reads the installed file and fails on anything new.
NUMBA_CUDA_MATH = {
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "copysign", "cos", "cosh",
    "degrees", "erf", "erfc", "exp", "exp2", "expm1", "fabs", "floor", "fmod", "frexp", "gamma",
    "hypot", "isfinite", "isinf", "isnan", "ldexp", "lgamma", "log", "log10", "log1p", "log2", "modf",
    "nextafter", "pow", "radians", "remainder", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
}


def _installed_cudamath() -> set[str]:
    spec = importlib.util.find_spec("numba_cuda")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        path = Path(loc) / "numba" / "cuda" / "cudamath.py"
        if path.exists():
            return set(re.findall(r"\bmath\.([a-z0-9_]+)", path.read_text()))
    return set()


def test_every_numba_cuda_math_function_has_a_rule_or_a_refusal():
    from harness.engine.frontend.source import FUNCTIONS
    names = NUMBA_CUDA_MATH | _installed_cudamath()
    known = set(PARTIALS) | PIECEWISE_CONSTANT | BOOLEAN | set(NO_RULE_MESSAGE)
    unmapped = sorted(n for n in names if FUNCTIONS.get(id(getattr(math, n, None))) is None)
    assert not unmapped, f"math functions numba.cuda compiles that the front end does not know: {unmapped}"
    missing = sorted(n for n in names if FUNCTIONS[id(getattr(math, n))] not in known)
    assert not missing, f"math functions with neither a rule, nor a zero derivative, nor a refusal: {missing}"


def test_docs_rule_list_is_generated_from_the_tables():
    text = rules_doc.DOC.read_text()
    assert rules_doc.render(text) == text, \
        "docs/engine.md's rule list differs from harness/engine/rules/table.py: run python -m harness.engine.rules.doc"
    for op in PARTIALS:
        assert f"| `{op}` |" in text


def test_rules_doc_check_detects_drift(tmp_path, monkeypatch):
    doc = tmp_path / "engine.md"
    doc.write_text(rules_doc.DOC.read_text())
    assert rules_doc.main(["--check", "--doc", str(doc)]) == 0
    monkeypatch.setitem(PARTIALS, "sin", ("-cos(x)",))
    assert rules_doc.main(["--check", "--doc", str(doc)]) == 1
    assert rules_doc.main(["--doc", str(doc)]) == 0 and "`-cos(x)`" in doc.read_text()


# ----------------------------------------------------------------------------- every rule in a case

def _case_rule_modes() -> dict[str, set[str]]:
    """rule -> the modes in which some expected-to-pass case differentiates it."""
    from harness.cases import load_case_file
    from harness.engine.analyses.activity import varied_values
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.ir.ssa import Assign, Param, Prim, walk
    from harness.engine.frontend.normalize import lower_kernel
    from harness.cases.inputs import load_kernel
    used: dict[str, set[str]] = {}
    for path in sorted((ROOT / "cases").glob("*.yaml")):
        for case in load_case_file(path, ROOT):
            if case.kernel is None or case.expect.kind != "pass" or case.launch.style != "kernel" \
                    or case.check.fd is None and not case.check.dot:     # (None: native kernels only)
                continue
            modes = {m for m in case.modes if m in ("forward", "reverse")}
            if not modes or any(a.kind not in ("array", "scalar") for a in case.args):
                continue
            params = [Param(a.name, a.kind, a.array.dtype if a.kind == "array" else (a.dtype or "float64"),
                            len(a.array.shape) if a.kind == "array" else 0) for a in case.args]
            try:
                ir = lower_kernel(parse_kernel(load_kernel(case.kernel, ROOT)), params)
                activity = {a.name: a.activity for a in case.args}
                for arr in ir.local_arrays:
                    activity[arr.name] = "duplicated" if np.issubdtype(np.dtype(arr.dtype), np.floating) else "const"
                varied = varied_values(ir, activity)
            except UnsupportedError:
                continue
            for s in walk(ir.body):
                if isinstance(s, Assign) and isinstance(s.expr, Prim) and s.target in varied:
                    used.setdefault(s.expr.op, set()).update(modes)
    return used


def test_every_rule_is_differentiated_by_a_case_in_both_modes(backend):
    used = _case_rule_modes()
    missing = {op: sorted({"forward", "reverse"} - used.get(op, set())) for op in PARTIALS}
    missing = {op: m for op, m in missing.items() if m}
    assert not missing, ("rules that no expected-to-pass case in cases/ differentiates (rule: missing modes): "
                         f"{missing}; add them to a case (see cases/rules-*.yaml)")


# ----------------------------------------------------------------------------- refusals and non-float functions

@pytest.mark.parametrize("kernel, marker, match", [
    ("uses_gamma", "gamma", "cannot differentiate `gamma`: gamma needs digamma"),
    ("uses_modf", "modf", "`math.modf` cannot be differentiated: it returns a"),
    ("uses_log_base", "log-base", r"`math.log` takes 1 operand\(s\) in a kernel, got 2"),
])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_functions_without_a_rule_are_refused_at_their_line(kernels, engine, backend, mark_line, kernel, marker,
                                                            match, mode):
    from harness.core.activity import Duplicated
    from harness.engine.runtime.launch import LaunchConfig
    x = backend.asarray(np.full(4, 0.5))
    with pytest.raises(UnsupportedError, match=match) as info:
        engine.prepare(getattr(kernels, kernel), LaunchConfig.threads(4),
                       [Duplicated(backend.asarray(np.zeros(4)), backend.asarray(np.zeros(4))),
                        Duplicated(x, backend.asarray(np.zeros(4)))], mode)
    assert info.value.line == mark_line(marker)


def test_boolean_predicates_and_round_carry_no_derivative(kernels, engine, launching_backend):
    from harness.core.activity import Duplicated
    from harness.engine.runtime.launch import LaunchConfig
    be = launching_backend
    x, dx = np.array([0.5, -1.25, 2.0, 3.5]), np.array([1.0, 2.0, 3.0, 4.0])
    out, dout = be.asarray(np.zeros(4)), be.asarray(np.zeros(4))
    engine.launch(kernels.uses_predicates_and_round, LaunchConfig.threads(4), Duplicated(out, dout),
                  Duplicated(be.asarray(x), be.asarray(dx)), mode="forward")
    np.testing.assert_allclose(be.to_host(out), 2 * x)
    np.testing.assert_allclose(be.to_host(dout), 2 * dx)
