"""Derivative rules: the partial derivatives of every primitive, written as math.

Each entry lists d op / d arg_k for the operands `x`, `y` (in call order) and the result `r`.
Both modes use the same table: forward emits  dr = sum_k partial_k * dx_k,  reverse emits
dx_k += dr * partial_k. `sign(x)` is 1, -1 or 0; the constants are listed in CONSTANTS.
At kinks (abs, min, max) the rules pick the subgradient documented in docs/engine.md.
The rule list in docs/engine.md is generated from these tables (harness/engine/rules_doc.py).
"""
from __future__ import annotations

PARTIALS: dict[str, tuple[str, ...]] = {
    # arithmetic
    "copy": ("1",),
    "neg": ("-1",),
    "add": ("1", "1"),
    "sub": ("1", "-1"),
    "mul": ("y", "x"),
    "div": ("1 / y", "-r / y"),
    "pow": ("y * x ** (y - 1)", "r * log(x)"),
    "mod": ("1", "-floor(x / y)"),
    "fmod": ("1", "-(floor(x / y) if x / y >= 0 else ceil(x / y))"),   # -trunc(x / y)
    "remainder": ("1", "-floor((x - r) / y + 0.5)"),    # r = x - n y with n = x / y rounded to an integer
    # powers, exponentials, logarithms
    "sqrt": ("0.5 / r",),
    "cbrt": ("1 / (3 * r * r)",),               # generated code calls libdevice's cbrt (codegen.CBRT_PRELUDE)
    "cbrtf": ("1 / (3 * r * r)",),              # the float32 cbrt (libdevice's cbrtf)
    "exp": ("r",),
    "exp2": ("r * LN2",),
    "expm1": ("r + 1",),
    "log": ("1 / x",),
    "log2": ("1 / (x * LN2)",),
    "log10": ("1 / (x * LN10)",),
    "log1p": ("1 / (1 + x)",),
    "ldexp": ("ldexp(1, y)", "r * LN2"),      # x 2^y; y is an integer, never differentiated
    # trigonometry
    "sin": ("cos(x)",),
    "cos": ("-sin(x)",),
    "tan": ("1 + r * r",),
    "asin": ("1 / sqrt(1 - x * x)",),
    "acos": ("-1 / sqrt(1 - x * x)",),
    "atan": ("1 / (1 + x * x)",),
    "atan2": ("y / (x * x + y * y)", "-x / (x * x + y * y)"),    # atan2(x, y) = angle of (y, x)
    "hypot": ("x / r", "y / r"),
    "degrees": ("DEG_PER_RAD",),
    "radians": ("RAD_PER_DEG",),
    # hyperbolic
    "sinh": ("cosh(x)",),
    "cosh": ("sinh(x)",),
    "tanh": ("1 - r * r",),
    "asinh": ("1 / sqrt(x * x + 1)",),
    "acosh": ("1 / sqrt(x * x - 1)",),
    "atanh": ("1 / (1 - x * x)",),
    # special functions
    "erf": ("TWO_OVER_SQRTPI * exp(-x * x)",),
    "erfc": ("-TWO_OVER_SQRTPI * exp(-x * x)",),
    # piecewise
    "abs": ("sign(x)",),
    "fabs": ("sign(x)",),
    "min": ("1 if x <= y else 0", "0 if x <= y else 1"),
    "max": ("1 if x >= y else 0", "0 if x >= y else 1"),
    "copysign": ("sign(x) * copysign(1, y)", "0"),
    "nextafter": ("1", "0"),                  # the neighbouring float of x: x itself to first order
    # conversions between float precisions
    "cast_float32": ("1",),
    "cast_float64": ("1",),
}

# Float-valued primitives whose derivative is zero almost everywhere: their results carry no
# derivative at all (they are treated like integers by the activity analysis).
PIECEWISE_CONSTANT = {"floor", "ceil", "trunc", "round", "floordiv"}

# Primitives with no derivative rule that return floats: refused rather than guessed.
NO_RULE_MESSAGE = {
    "lgamma": "lgamma needs digamma, which CUDA's libdevice lacks",
    "gamma": "gamma needs digamma, which CUDA's libdevice lacks",
    "frexp": "it returns a (mantissa, exponent) tuple; write the mantissa as x / 2.0 ** e",
    "modf": "it returns a (fraction, integer part) tuple; write the fraction as x - math.trunc(x)",
    "cast_float16": "float16 values cannot carry derivatives (derivative registers are float32 or float64); "
                    "compute in float32",
}

# Functions of floats whose result is a boolean: never differentiable, nothing to refuse.
BOOLEAN = {"isnan", "isinf", "isfinite"}

# How many operands each primitive takes when called as a function (the rest: len(PARTIALS[op])).
ARITY = {"round": (1, 2), "min": (2, None), "max": (2, None), "floor": (1, 1), "ceil": (1, 1),
         "trunc": (1, 1), "frexp": (1, 1), "modf": (1, 1), "gamma": (1, 1), "lgamma": (1, 1)}


# Functions returning a tuple: refused where they are called, whatever their activity.
TUPLE_RESULT = {"frexp", "modf"}


def arity_problem(op: str, nargs: int) -> str | None:
    """Why a call of `op` with `nargs` operands cannot be lowered (None when it can)."""
    if op in TUPLE_RESULT:
        return f"cannot be differentiated: {NO_RULE_MESSAGE[op]}"
    if op.startswith("cast_") or op == "trunc_int":
        lo, hi = 1, 1
    elif op in ARITY:
        lo, hi = ARITY[op]
    elif op in PARTIALS:
        lo = hi = len(PARTIALS[op])
    elif op in BOOLEAN:
        lo, hi = 1, 1
    else:
        return None
    if nargs < lo or (hi is not None and nargs > hi):
        want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi else f"at least {lo}"
        return f"takes {want} operand(s) in a kernel, got {nargs}"
    return None

CONSTANTS = {
    "LN2": 0.6931471805599453,
    "LN10": 2.302585092994046,
    "TWO_OVER_SQRTPI": 1.1283791670955126,
    "DEG_PER_RAD": 57.29577951308232,       # 180 / pi
    "RAD_PER_DEG": 0.017453292519943295,    # pi / 180
}
