"""The op table: every math function and operator the engine knows, each once, with everything the
harness says about it: its name in the IR, how a kernel calls it (`math.<name>`, numpy's names, a
builtin), how many operands it takes, its partial derivatives as math, and how the Warp and Taichi
adapters spell it. Read by the engine's front end (frontend.FUNCTIONS) and rule tables (rules.py),
the generated rule list (rules_doc.py), the adapters' translator and targets (harness/adapters) and
the fuzzer's grammar (harness/fuzz/grammar.py). The engine owns it: it imports nothing else.

Partials: d op / d arg_k for the operands `x`, `y` (in call order) and the result `r`; `sign(x)` is
1, -1 or 0; the constants are rules.CONSTANTS. At kinks (abs, min, max) the rules pick the
subgradient documented in docs/engine.md. An adapter's spelling is a template over the operands
`{0}`, `{1}` and the literal one `{one}` of the run's float type.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Op:
    name: str                                  # the primitive's name in the IR and the rule tables
    partials: tuple[str, ...] | None = None    # d op / d operand k (None: no derivative rule)
    math: bool = False                         # `math.<name>` calls it (and numpy's namesake, unless numpy_namesake)
    numpy_namesake: bool = True                # np.<name> computes the same (np.remainder does not)
    numpy: tuple[str, ...] = ()                # numpy's other names for it (np.arcsin, ...)
    builtin: bool = False                      # Python's builtin of that name calls it (abs, min, max, round, pow)
    arity: tuple[int, int | None] | None = None   # operands when called, where not len(partials)
    piecewise_constant: bool = False           # float-valued, derivative zero almost everywhere: carries none
    boolean: bool = False                      # a boolean result: never differentiable, nothing to refuse
    refused: str | None = None                 # why it has no rule: refused rather than guessed
    tuple_result: bool = False                 # returns a tuple: refused where it is called
    translated: bool = False                   # the adapters' translator recognises `math.<name>`
    warp: str | None = None                    # its spelling in a Warp kernel
    taichi: str | None = None                  # its spelling in a Taichi kernel
    fuzz_adapters: bool = True                 # the fuzzer's adapters profile may draw it (where both spell it)


OPS: tuple[Op, ...] = (
    # arithmetic
    Op("copy", ("1",)),
    Op("neg", ("-1",)),
    Op("add", ("1", "1")),
    Op("sub", ("1", "-1")),
    Op("mul", ("y", "x")),
    Op("div", ("1 / y", "-r / y")),
    Op("pow", ("y * x ** (y - 1)", "r * log(x)"), math=True, numpy=("power",), builtin=True, translated=True,
       warp="wp.pow({0}, {1})", taichi="({0} ** {1})"),
    Op("mod", ("1", "-floor(x / y)"), numpy=("remainder", "mod")),
    Op("fmod", ("1", "-(floor(x / y) if x / y >= 0 else ceil(x / y))"), math=True, translated=True),   # -trunc(x / y)
    Op("remainder", ("1", "-floor((x - r) / y + 0.5)"), math=True, numpy_namesake=False),   # r = x - n y with n = x / y rounded to an integer
    # powers, exponentials, logarithms
    Op("sqrt", ("0.5 / r",), math=True, translated=True, warp="wp.sqrt({0})", taichi="ti.sqrt({0})"),
    # generated code calls libdevice's cbrt (libm.CBRT_PRELUDE); Taichi has none: its port spells it with pow
    Op("cbrt", ("1 / (3 * r * r)",), math=True, translated=True, warp="wp.cbrt({0})",
       taichi="(ti.select({0} < 0, -{one}, {one}) * ti.abs({0}) ** {third})", fuzz_adapters=False),
    Op("cbrtf", ("1 / (3 * r * r)",)),              # the float32 cbrt (libdevice's cbrtf)
    Op("exp", ("r",), math=True, translated=True, warp="wp.exp({0})", taichi="ti.exp({0})"),
    # Warp and Taichi have no exp2, degrees, radians or ldexp: the ports spell them out (kept out of the
    # fuzzer's adapters profile, like every op the translator learnt after its seeds were fixed)
    Op("exp2", ("r * LN2",), math=True, translated=True, warp="wp.pow({two}, {0})", taichi="({two} ** {0})",
       fuzz_adapters=False),
    # Warp and Taichi have no expm1 or log1p: the ports spell them out, as a user porting would
    Op("expm1", ("r + 1",), math=True, translated=True, warp="(wp.exp({0}) - {one})", taichi="(ti.exp({0}) - {one})"),
    Op("log", ("1 / x",), math=True, translated=True, warp="wp.log({0})", taichi="ti.log({0})"),
    # kept out of the fuzzer's adapters profile: drawing it would change the kernel every adapters seed draws.
    # Not Taichi's ti.math.log2: it divides by ln 2 taken in the default float type (float32 here), which
    # leaves a float64 log2 with float32 precision (1e-8 relative error)
    Op("log2", ("1 / (x * LN2)",), math=True, translated=True, warp="wp.log2({0})", taichi="(ti.log({0}) / ti.log({two}))",
       fuzz_adapters=False),
    Op("log10", ("1 / (x * LN10)",), math=True, translated=True, warp="wp.log10({0})",
       taichi="(ti.log({0}) / ti.log({ten}))", fuzz_adapters=False),
    Op("log1p", ("1 / (1 + x)",), math=True, translated=True, warp="wp.log({one} + {0})", taichi="ti.log({one} + {0})"),
    Op("ldexp", ("ldexp(1, y)", "r * LN2"), math=True,       # x 2^y; y is an integer, never differentiated
       translated=True, warp="({0} * wp.pow({two}, {1}))", taichi="({0} * {two} ** {1})", fuzz_adapters=False),
    # trigonometry
    Op("sin", ("cos(x)",), math=True, translated=True, warp="wp.sin({0})", taichi="ti.sin({0})"),
    Op("cos", ("-sin(x)",), math=True, translated=True, warp="wp.cos({0})", taichi="ti.cos({0})"),
    Op("tan", ("1 + r * r",), math=True, translated=True, warp="wp.tan({0})", taichi="ti.tan({0})"),
    Op("asin", ("1 / sqrt(1 - x * x)",), math=True, numpy=("arcsin",), translated=True, warp="wp.asin({0})",
       taichi="ti.asin({0})"),
    Op("acos", ("-1 / sqrt(1 - x * x)",), math=True, numpy=("arccos",), translated=True, warp="wp.acos({0})",
       taichi="ti.acos({0})"),
    # Taichi has no atan: its port spells it out
    Op("atan", ("1 / (1 + x * x)",), math=True, numpy=("arctan",), translated=True, warp="wp.atan({0})",
       taichi="ti.atan2({0}, {one})"),
    Op("atan2", ("y / (x * x + y * y)", "-x / (x * x + y * y)"), math=True, numpy=("arctan2",),   # atan2(x, y) = angle of (y, x)
       translated=True, warp="wp.atan2({0}, {1})", taichi="ti.atan2({0}, {1})"),
    # Warp and Taichi have no hypot: the ports spell it out
    Op("hypot", ("x / r", "y / r"), math=True, translated=True, warp="wp.sqrt({0} * {0} + {1} * {1})",
       taichi="ti.sqrt({0} * {0} + {1} * {1})"),
    Op("degrees", ("DEG_PER_RAD",), math=True, numpy=("rad2deg",), translated=True, warp="({0} * {deg_per_rad})",
       taichi="({0} * {deg_per_rad})", fuzz_adapters=False),
    Op("radians", ("RAD_PER_DEG",), math=True, numpy=("deg2rad",), translated=True, warp="({0} * {rad_per_deg})",
       taichi="({0} * {rad_per_deg})", fuzz_adapters=False),
    # hyperbolic
    # Taichi has no sinh, cosh, asinh, acosh, atanh, Warp none of the last three: the ports spell them
    # out from exp, log and sqrt (kept out of the fuzzer's adapters profile, as above)
    Op("sinh", ("cosh(x)",), math=True, translated=True, warp="wp.sinh({0})",
       taichi="((ti.exp({0}) - ti.exp(-{0})) / {two})", fuzz_adapters=False),
    Op("cosh", ("sinh(x)",), math=True, translated=True, warp="wp.cosh({0})",
       taichi="((ti.exp({0}) + ti.exp(-{0})) / {two})", fuzz_adapters=False),
    Op("tanh", ("1 - r * r",), math=True, translated=True, warp="wp.tanh({0})", taichi="ti.tanh({0})"),
    Op("asinh", ("1 / sqrt(x * x + 1)",), math=True, numpy=("arcsinh",), translated=True,
       warp="wp.log({0} + wp.sqrt({0} * {0} + {one}))", taichi="ti.log({0} + ti.sqrt({0} * {0} + {one}))",
       fuzz_adapters=False),
    Op("acosh", ("1 / sqrt(x * x - 1)",), math=True, numpy=("arccosh",), translated=True,
       warp="wp.log({0} + wp.sqrt({0} * {0} - {one}))", taichi="ti.log({0} + ti.sqrt({0} * {0} - {one}))",
       fuzz_adapters=False),
    Op("atanh", ("1 / (1 - x * x)",), math=True, numpy=("arctanh",), translated=True,
       warp="(wp.log(({one} + {0}) / ({one} - {0})) / {two})", taichi="(ti.log(({one} + {0}) / ({one} - {0})) / {two})",
       fuzz_adapters=False),
    # special functions
    Op("erf", ("TWO_OVER_SQRTPI * exp(-x * x)",), math=True, translated=True, warp="wp.erf({0})"),
    Op("erfc", ("-TWO_OVER_SQRTPI * exp(-x * x)",), math=True, translated=True, warp="wp.erfc({0})"),
    # piecewise
    Op("abs", ("sign(x)",), builtin=True, warp="wp.abs({0})", taichi="ti.abs({0})"),
    Op("fabs", ("sign(x)",), math=True, numpy=("absolute",), translated=True, warp="wp.abs({0})", taichi="ti.abs({0})"),
    Op("min", ("1 if x <= y else 0", "0 if x <= y else 1"), numpy=("minimum", "fmin"), builtin=True, arity=(2, None)),
    Op("max", ("1 if x >= y else 0", "0 if x >= y else 1"), numpy=("maximum", "fmax"), builtin=True, arity=(2, None)),
    Op("copysign", ("sign(x) * copysign(1, y)", "0"), math=True, translated=True),
    Op("nextafter", ("1", "0"), math=True),                  # the neighbouring float of x: x itself to first order
    # conversions between float precisions
    Op("cast_float32", ("1",)),
    Op("cast_float64", ("1",)),
    # float-valued, zero derivative almost everywhere
    # an integer in numba: the translator casts the spelling's value (trunc is the cast itself)
    Op("floor", math=True, arity=(1, 1), piecewise_constant=True, translated=True, warp="wp.floor({0})",
       taichi="ti.floor({0})", fuzz_adapters=False),
    Op("ceil", math=True, arity=(1, 1), piecewise_constant=True, translated=True, warp="wp.ceil({0})",
       taichi="ti.ceil({0})", fuzz_adapters=False),
    Op("trunc", math=True, arity=(1, 1), piecewise_constant=True, translated=True),
    Op("round", builtin=True, arity=(1, 2), piecewise_constant=True),
    Op("floordiv", piecewise_constant=True),
    # no derivative rule: refused
    Op("lgamma", math=True, arity=(1, 1), refused="lgamma needs digamma, which CUDA's libdevice lacks", translated=True),
    Op("gamma", math=True, arity=(1, 1), refused="gamma needs digamma, which CUDA's libdevice lacks"),
    Op("frexp", math=True, arity=(1, 1), tuple_result=True,
       refused="it returns a (mantissa, exponent) tuple; write the mantissa as x / 2.0 ** e"),
    Op("modf", math=True, arity=(1, 1), tuple_result=True,
       refused="it returns a (fraction, integer part) tuple; write the fraction as x - math.trunc(x)"),
    Op("cast_float16", refused="float16 values cannot carry derivatives (derivative registers are float32 or float64); "
                               "compute in float32"),
    # boolean results
    Op("isnan", math=True, boolean=True, translated=True, warp="wp.isnan({0})", taichi="ti.math.isnan({0})",
       fuzz_adapters=False),
    Op("isinf", math=True, boolean=True, translated=True, warp="wp.isinf({0})", taichi="ti.math.isinf({0})",
       fuzz_adapters=False),
    Op("isfinite", math=True, boolean=True, translated=True, warp="wp.isfinite({0})",
       taichi="(not (ti.math.isinf({0}) or ti.math.isnan({0})))", fuzz_adapters=False),
)

BY_NAME: dict[str, Op] = {op.name: op for op in OPS}
assert len(BY_NAME) == len(OPS), "an op is listed twice"


def spelled_by(system: str) -> dict[str, str]:
    """name -> template of every op `system` ("warp" or "taichi") spells."""
    return {op.name: getattr(op, system) for op in OPS if getattr(op, system) is not None}
