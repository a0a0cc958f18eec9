"""Derivative rules: the partial derivatives of every primitive, written as math.

Each entry lists d op / d arg_k for the operands `x`, `y` (in call order) and the result `r`.
Both modes use the same table: forward emits  dr = sum_k partial_k * dx_k,  reverse emits
dx_k += dr * partial_k. `sign(x)` is 1, -1 or 0; the constants are LN2, LN10, TWO_OVER_SQRTPI.
At kinks (abs, min, max) the rules pick the subgradient documented in docs/engine.md.
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
    # powers, exponentials, logarithms
    "sqrt": ("0.5 / r",),
    "cbrt": ("r / (3 * x)",),
    "exp": ("r",),
    "exp2": ("r * LN2",),
    "expm1": ("r + 1",),
    "log": ("1 / x",),
    "log2": ("1 / (x * LN2)",),
    "log10": ("1 / (x * LN10)",),
    "log1p": ("1 / (1 + x)",),
    # trigonometry
    "sin": ("cos(x)",),
    "cos": ("-sin(x)",),
    "tan": ("1 + r * r",),
    "asin": ("1 / sqrt(1 - x * x)",),
    "acos": ("-1 / sqrt(1 - x * x)",),
    "atan": ("1 / (1 + x * x)",),
    "atan2": ("y / (x * x + y * y)", "-x / (x * x + y * y)"),    # atan2(x, y) = angle of (y, x)
    "hypot": ("x / r", "y / r"),
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
    # conversions between float precisions
    "cast_float32": ("1",),
    "cast_float64": ("1",),
    "cast_float16": ("1",),
}

# Float-valued primitives whose derivative is zero almost everywhere: their results carry no
# derivative at all (they are treated like integers by the activity analysis).
PIECEWISE_CONSTANT = {"floor", "ceil", "trunc", "round", "floordiv"}

# Primitives with no derivative rule that return floats: refused rather than guessed.
NO_RULE_MESSAGE = {"lgamma": "lgamma needs digamma, which CUDA's libdevice lacks"}

CONSTANTS = {
    "LN2": 0.6931471805599453,
    "LN10": 2.302585092994046,
    "TWO_OVER_SQRTPI": 1.1283791670955126,
}
