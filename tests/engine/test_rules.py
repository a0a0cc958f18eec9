"""Every derivative rule of harness.engine.rules.table.PARTIALS against finite differences of its primitive.

Two levels:
  * unit: each partial-derivative template, instantiated by codegen.partial_text exactly as the
    generated kernels use it, evaluated in float64 at sample points inside the function's domain,
    against Richardson-extrapolated central differences of the primitive's Python implementation
    (rtol 1e-6). The tests iterate the table, so a new rule is tested (or, lacking a domain and an
    implementation here, fails loudly) automatically.
  * end to end: kernels in tests/kernels_for_tests.py that call every rule, launched through the
    engine in forward and reverse mode on the process backend and judged by the gradient oracles
    (harness.oracles.run_gradient_oracles through harness.problems.kernel.KernelProblem).
"""
from __future__ import annotations

import ast
import math
import operator

import numpy as np
import pytest

from harness.engine.emission import codegen
from harness.engine.rules.table import CONSTANTS, NO_RULE_MESSAGE, PARTIALS, PIECEWISE_CONSTANT

RTOL = 1e-6
ATOL = 1e-9


def _identity(x):
    return x


def _floored_mod(x, y):
    return x % y                          # Python (and numba) float %: floored, result has y's sign


# op -> (the primitive in float64, sample points inside its domain and away from its kinks).
# Points are (x,) for unary and (x, y) for binary ops, in call order.
SAMPLES: dict[str, tuple] = {
    "copy": (_identity, [(0.3,), (-1.7,), (12.5,)]),
    "neg": (operator.neg, [(0.3,), (-1.7,)]),
    "add": (operator.add, [(0.3, -1.2), (2.5, 4.0)]),
    "sub": (operator.sub, [(0.3, -1.2), (2.5, 4.0)]),
    "mul": (operator.mul, [(0.3, -1.2), (2.5, 4.0), (-3.0, 0.5)]),
    "div": (operator.truediv, [(0.3, -1.2), (2.5, 4.0), (-3.0, 0.5)]),
    "pow": (operator.pow, [(1.7, 2.3), (0.5, -1.5), (2.0, 3.0), (0.9, 0.5)]),
    "mod": (_floored_mod, [(5.3, 2.1), (-5.3, 2.1), (5.3, -2.1), (0.7, 3.0)]),
    "fmod": (math.fmod, [(5.3, 2.1), (-5.3, 2.1), (5.3, -2.1), (0.7, 3.0)]),
    "sqrt": (math.sqrt, [(0.2,), (1.0,), (7.5,)]),
    "cbrt": (math.cbrt, [(0.2,), (1.0,), (7.5,), (-2.0,)]),
    "cbrtf": (math.cbrt, [(0.2,), (1.0,), (7.5,), (-2.0,)]),
    "remainder": (math.remainder, [(5.3, 2.1), (-5.3, 2.1), (5.3, -2.1), (0.7, 3.0), (4.6, 2.0)]),
    "nextafter": (lambda x, y: x, [(0.3, 1.0), (-1.7, -5.0)]),       # x to first order (an ulp away)
    "ldexp": (lambda x, y: x * 2.0 ** y, [(0.3, 3), (-1.7, -2)]),  # y is an integer in a kernel
    "degrees": (math.degrees, [(0.3,), (-1.7,)]),
    "radians": (math.radians, [(30.0,), (-100.0,)]),
    "exp": (math.exp, [(-1.5,), (0.0,), (2.3,)]),
    "exp2": (math.exp2, [(-1.5,), (0.0,), (3.3,)]),
    "expm1": (math.expm1, [(-1.5,), (1e-3,), (2.3,)]),
    "log": (math.log, [(0.2,), (1.0,), (9.0,)]),
    "log2": (math.log2, [(0.2,), (1.0,), (9.0,)]),
    "log10": (math.log10, [(0.2,), (1.0,), (9.0,)]),
    "log1p": (math.log1p, [(-0.5,), (0.0,), (9.0,)]),
    "sin": (math.sin, [(-2.0,), (0.3,), (4.0,)]),
    "cos": (math.cos, [(-2.0,), (0.3,), (4.0,)]),
    "tan": (math.tan, [(-1.2,), (0.3,), (1.0,)]),
    "asin": (math.asin, [(-0.9,), (0.0,), (0.6,)]),
    "acos": (math.acos, [(-0.9,), (0.0,), (0.6,)]),
    "atan": (math.atan, [(-3.0,), (0.0,), (0.6,)]),
    "atan2": (math.atan2, [(0.3, 1.2), (-1.0, -2.0), (2.0, -0.5), (-0.7, 0.4)]),
    "hypot": (math.hypot, [(0.3, 1.2), (-1.0, -2.0), (3.0, 4.0)]),
    "sinh": (math.sinh, [(-2.0,), (0.0,), (1.5,)]),
    "cosh": (math.cosh, [(-2.0,), (0.0,), (1.5,)]),
    "tanh": (math.tanh, [(-2.0,), (0.0,), (1.5,)]),
    "asinh": (math.asinh, [(-2.0,), (0.0,), (1.5,)]),
    "acosh": (math.acosh, [(1.1,), (2.0,), (7.0,)]),
    "atanh": (math.atanh, [(-0.9,), (0.0,), (0.6,)]),
    "erf": (math.erf, [(-2.0,), (0.0,), (0.8,)]),
    "erfc": (math.erfc, [(-2.0,), (0.0,), (0.8,)]),
    "abs": (abs, [(-1.3,), (0.7,)]),
    "fabs": (math.fabs, [(-1.3,), (0.7,)]),
    "min": (min, [(0.3, 1.2), (1.2, 0.3), (-2.0, -1.0)]),
    "max": (max, [(0.3, 1.2), (1.2, 0.3), (-2.0, -1.0)]),
    "copysign": (math.copysign, [(1.3, 2.0), (1.3, -2.0), (-1.3, 2.0), (-1.3, -0.5)]),
    "cast_float32": (_identity, [(0.3,), (-1.7,)]),
    "cast_float64": (_identity, [(0.3,), (-1.7,)]),
}

# Kinks: the subgradient each piecewise rule picks there (the rules module documents the choice).
# min/max at a tie: the two partials sum to 1, so min(u, u) and max(u, u) have derivative 1.
KINKS = {"abs": [((0.0,), (0.0,))], "fabs": [((0.0,), (0.0,))],
         "min": [((0.5, 0.5), None)], "max": [((0.5, 0.5), None)]}


def _richardson_fd(f, point: tuple, k: int) -> float:
    """d f / d point[k] by central differences at h and h/2, Richardson-extrapolated (error O(h^4))."""
    h = 1e-3 * max(1.0, abs(point[k]))

    def central(step):
        up, down = list(point), list(point)
        up[k] += step
        down[k] -= step
        return (f(*up) - f(*down)) / (2.0 * step)
    return (4.0 * central(h / 2.0) - central(h)) / 3.0


def _instantiate(op: str, k: int, ftype: str = "float64") -> str:
    """The partial as generated code writes it, with operands a0, a1 and result res."""
    arity = len(PARTIALS[op])
    return codegen.partial_text(op, k, ("a0", "a1")[:arity], "res", ftype)


def _eval_instantiated(op: str, k: int, point: tuple, result: float) -> float:
    text = _instantiate(op, k)
    names = {"math": math, "float64": float, "res": result}
    names.update({f"a{j}": v for j, v in enumerate(point)})
    return float(eval(text, names))       # noqa: S307 - our own rule text


def _sign(x):
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


def _eval_template(op: str, k: int, point: tuple, result: float) -> float:
    """The template read as plain math (math's functions, sign, CONSTANTS), independently of codegen."""
    names = {n: getattr(math, n) for n in dir(math) if not n.startswith("_")}
    names.update(CONSTANTS)
    names.update({"sign": _sign, "r": result})
    names.update(dict(zip(("x", "y"), point)))
    return float(eval(PARTIALS[op][k], names))  # noqa: S307


# ----------------------------------------------------------------------------- the table itself

def test_every_rule_has_a_domain_and_an_implementation():
    missing = sorted(set(PARTIALS) - set(SAMPLES))
    assert not missing, (f"rules without sample points/primitive in tests/engine/test_rules.py SAMPLES: {missing}; "
                         "add the primitive's Python implementation and points inside its domain")


def test_sample_table_has_no_stale_entries():
    stale = sorted(set(SAMPLES) - set(PARTIALS))
    assert not stale, f"SAMPLES lists ops that have no rule any more: {stale}"


def test_rule_arity_matches_primitive():
    for op, partials in PARTIALS.items():
        if op not in SAMPLES:
            continue
        _, points = SAMPLES[op]
        assert all(len(p) == len(partials) for p in points), \
            f"{op}: {len(partials)} partial(s) but sample points of arity {[len(p) for p in points]}"


def test_tables_are_disjoint():
    assert not set(PARTIALS) & PIECEWISE_CONSTANT
    assert not set(PARTIALS) & set(NO_RULE_MESSAGE)


def test_every_float_function_of_the_front_end_has_a_rule_or_an_explicit_refusal():
    """A math function the front end recognises must be differentiable, piecewise constant, or refused
    with a message: never silently treated as constant."""
    from harness.engine.frontend.source import FUNCTIONS
    from harness.engine.rules.table import BOOLEAN
    non_float = {"cast_bool", "trunc_int"} | BOOLEAN | {n for n in FUNCTIONS.values()
                                              if n.startswith("cast_") and "float" not in n}
    unknown = sorted(n for n in set(FUNCTIONS.values()) - non_float
                     if n not in PARTIALS and n not in PIECEWISE_CONSTANT and n not in NO_RULE_MESSAGE)
    assert not unknown, f"front-end functions with neither a rule nor a refusal: {unknown}"


# ----------------------------------------------------------------------------- each partial vs FD

@pytest.mark.parametrize("op", sorted(PARTIALS))
def test_partial_matches_central_differences(op):
    assert op in SAMPLES, f"no domain entry for rule '{op}' in SAMPLES: cannot test it"
    primitive, points = SAMPLES[op]
    failures = []
    for point in points:
        result = primitive(*point)
        for k in range(len(PARTIALS[op])):
            fd = _richardson_fd(primitive, point, k)
            generated = _eval_instantiated(op, k, point, result)
            template = _eval_template(op, k, point, result)
            if abs(generated - template) > 1e-14 * max(1.0, abs(template)):
                failures.append(f"d{op}/d{'xy'[k]} at {point}: instantiated {generated!r} != template {template!r}")
            if not abs(generated - fd) <= RTOL * abs(fd) + ATOL:
                failures.append(f"d{op}/d{'xy'[k]} at {point}: rule {PARTIALS[op][k]!r} gives {generated!r}, "
                                f"finite differences {fd!r}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("op", sorted(KINKS))
def test_subgradient_at_kinks(op):
    for point, expected in KINKS[op]:
        result = SAMPLES[op][0](*point)
        partials = tuple(_eval_instantiated(op, k, point, result) for k in range(len(PARTIALS[op])))
        if expected is None:
            assert sum(partials) == 1.0, f"{op} at tie {point}: partials {partials} must sum to 1"
            assert all(p in (0.0, 1.0) for p in partials), partials
        else:
            assert partials == expected, f"{op} at {point}: partials {partials}, expected {expected}"




def _float32_params():
    return sorted(PARTIALS)


@pytest.mark.parametrize("op", _float32_params())
def test_float32_instantiation_types_every_literal(op):
    """In a float32 kernel every numeric literal of a partial is wrapped as float32(...), so the
    derivative code is not silently promoted to float64 (and agrees with the float64 value)."""
    for k in range(len(PARTIALS[op])):
        text = _instantiate(op, k, "float32")
        tree = ast.parse(text, mode="eval")
        wrapped = {id(c.args[0]) for c in ast.walk(tree) if isinstance(c, ast.Call)
                   and isinstance(c.func, ast.Name) and c.func.id == "float32" and c.args}
        # comparison operands (sign(x) tests x > 0) do not type the result
        wrapped |= {id(c) for node in ast.walk(tree) if isinstance(node, ast.Compare)
                    for c in [node.left, *node.comparators]}
        bare = [ast.unparse(c) for c in ast.walk(tree) if isinstance(c, ast.Constant)
                and isinstance(c.value, (int, float)) and not isinstance(c.value, bool) and id(c) not in wrapped]
        assert not bare, f"{op} partial {k} ({text!r}) has untyped literals {bare}"
        assert "float64" not in text, text
        if op not in SAMPLES:
            continue
        primitive, points = SAMPLES[op]
        point = points[0]
        result = primitive(*point)
        names = {"math": math, "float32": np.float32, "res": np.float32(result)}
        names.update({f"a{j}": np.float32(v) if isinstance(v, float) else v for j, v in enumerate(point)})
        got = float(eval(text, names))    # noqa: S307
        want = _eval_instantiated(op, k, point, result)
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), f"{op} partial {k}: float32 {got} vs {want}"


def test_instantiation_substitutes_operands_and_constants():
    text = codegen.partial_text("exp2", 0, ("u_3",), "_t9", "float64")
    assert "_t9" in text and "LN2" not in text and repr(CONSTANTS["LN2"]) in text
    text = codegen.partial_text("atan2", 1, ("u", "v"), "r_1", "float64")
    assert "x" not in text.replace("math.", "").replace("float64", "") and "u" in text and "v" in text
    # a literal operand appears as written: d/dy x ** 2.5 uses the literal base
    from harness.engine.ir.ssa import Lit
    text = codegen.partial_text("pow", 1, (Lit(2.5), "v"), "r", "float64")
    assert eval(text, {"math": math, "float64": float, "r": 2.5 ** 1.3, "v": 1.3}) == \
        pytest.approx(2.5 ** 1.3 * math.log(2.5), rel=1e-15)


# ----------------------------------------------------------------------------- end to end

# kernel -> (rows of out, x domain, y domain). Rows: one math function each (kernels_for_tests.py).
FAMILIES = {
    "trig_family": (11, (-0.8, 0.8), (0.5, 1.5)),
    "explog_family": (12, (0.5, 2.0), (0.5, 1.5)),
    "hyperbolic_family": (8, (-0.8, 0.8), (0.5, 1.5)),
    "arith_family": (14, (1.0, 2.0), (0.5, 1.5)),      # x's sign is drawn at random (below)
    "fmod_family": (3, (1.0, 2.0), (0.5, 1.5)),
}
# Rules not exercised end to end here, and why: a cast to a narrower float rounds, so float64 finite
# differences of it are rounding noise; its rule (1) is checked by the unit test above.
E2E_EXEMPT = {"cast_float32": "rounding cast",
              # numba.cuda cannot compile math.cbrt in the families' own primal (the engine generates
              # theirs, harness/engine/rules/libm.py): end to end in cases/dialect-cbrt.yaml, both dtypes
              "cbrt": "libdevice cbrt", "cbrtf": "libdevice cbrtf"}
N = 8


def _family_inputs(name: str, dtype: str, seed: int = 7):
    rows, (xlo, xhi), (ylo, yhi) = FAMILIES[name]
    rng = np.random.default_rng(seed)
    x = rng.uniform(xlo, xhi, N)
    if name in ("arith_family", "fmod_family"):
        x *= rng.choice([-1.0, 1.0], N)
    y = rng.uniform(ylo, yhi, N)
    out = np.zeros((rows, N))
    return out.astype(dtype), x.astype(dtype), y.astype(dtype)


def _family_ir(kernels, name):
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.ir.ssa import Param
    from harness.engine.frontend.normalize import lower_kernel
    params = [Param("out", "array", "float64", 2), Param("x", "array", "float64", 1),
              Param("y", "array", "float64", 1)]
    return lower_kernel(parse_kernel(getattr(kernels, name)), params)


def test_families_exercise_every_rule(kernels):
    """A rule added to the table must also be called by one of the end-to-end kernels."""
    from harness.engine.analyses.activity import varied_values
    from harness.engine.ir.ssa import Assign, Prim, walk
    used = set()
    for name in FAMILIES:
        ir = _family_ir(kernels, name)
        varied = varied_values(ir, {"out": "duplicated", "x": "duplicated", "y": "duplicated"})
        used |= {s.expr.op for s in walk(ir.body) if isinstance(s, Assign) and isinstance(s.expr, Prim)
                 and s.target in varied}
    missing = sorted(set(PARTIALS) - used - set(E2E_EXEMPT))
    assert not missing, f"rules no end-to-end kernel differentiates: {missing} (add them to kernels_for_tests.py)"


def test_family_rows_match_kernels(kernels):
    from harness.engine.ir.ssa import Lit, Store, walk
    for name, (rows, _, _) in FAMILIES.items():
        stored = {s.index[0].value for s in walk(_family_ir(kernels, name).body)
                  if isinstance(s, Store) and isinstance(s.index[0], Lit)}
        assert stored == set(range(rows)), f"{name}: out rows {sorted(stored)} but FAMILIES says {rows}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_end_to_end(name, mode, dtype, kernels, engine, host_args, launching_backend, request):
    from harness.engine.runtime.launch import LaunchConfig
    from harness.problems.kernel import KernelProblem
    from harness.problems.launch_log import LaunchLog
    from harness.oracles import run_gradient_oracles

    out, x, y = _family_inputs(name, dtype)
    args = host_args(("out", out, "duplicated"), ("x", x, "duplicated"), ("y", y, "duplicated"))
    problem = LaunchLog(KernelProblem(engine, getattr(kernels, name), LaunchConfig.threads(N, N), args))
    verdicts = run_gradient_oracles(problem, mode, directions=2, rng=11)
    assert [v.name for v in verdicts] == [f"fd-{mode}", "zero", "dot"]
    bad = [f"{v.name}: {v.verdict}: {v.message}" for v in verdicts if v.verdict != "pass"]
    assert not bad, f"{name} {mode} {dtype}:\n" + "\n".join(bad)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert problem.primal_state_error <= tol, \
        f"the {mode} kernel left primal arrays differing from a primal launch by {problem.primal_state_error}"


def test_end_to_end_detects_a_wrong_family_rule(kernels, engine, host_args, launching_backend, monkeypatch):
    """The end-to-end check can fail: with tan's rule off by a factor, the trig family fails FD."""
    from harness.engine.rules import table as rules
    from harness.engine.runtime.launch import LaunchConfig
    from harness.problems.kernel import KernelProblem
    from harness.oracles import run_gradient_oracles

    monkeypatch.setitem(rules.PARTIALS, "tan", ("2 + r * r",))
    out, x, y = _family_inputs("trig_family", "float64")
    args = host_args(("out", out, "duplicated"), ("x", x, "duplicated"), ("y", y, "duplicated"))
    problem = KernelProblem(engine, kernels.trig_family, LaunchConfig.threads(N, N), args)
    fd = run_gradient_oracles(problem, "forward", directions=2, rng=11, dot=False, zero_guard=False)[0]
    assert fd.verdict == "fail"
    assert fd.worst and all(w.index.startswith("out[2,") for w in fd.worst), \
        f"the worst entries should all be in tan's row out[2, :]: {[w.index for w in fd.worst]}"
