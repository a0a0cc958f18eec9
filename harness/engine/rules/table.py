"""Derivative rules: the partial derivatives of every primitive, written as math in the op table
(ops.py), and the tables the engine reads them through.

Each entry lists d op / d arg_k for the operands `x`, `y` (in call order) and the result `r`.
Both modes use the same table: forward emits  dr = sum_k partial_k * dx_k,  reverse emits
dx_k += dr * partial_k. `sign(x)` is 1, -1 or 0; the constants are listed in CONSTANTS.
At kinks (abs, min, max) the rules pick the subgradient documented in docs/engine.md.
The rule list in docs/engine.md is generated from these tables (harness/engine/rules/doc.py).
"""
from __future__ import annotations

from harness.engine.rules.ops import OPS

# d op / d operand k of every op with a rule, from the op table (ops.py, where each rule is written)
PARTIALS: dict[str, tuple[str, ...]] = {op.name: op.partials for op in OPS if op.partials is not None}

# Float-valued primitives whose derivative is zero almost everywhere: their results carry no
# derivative at all (they are treated like integers by the activity analysis).
PIECEWISE_CONSTANT = {op.name for op in OPS if op.piecewise_constant}

# Primitives with no derivative rule that return floats: refused rather than guessed.
NO_RULE_MESSAGE = {op.name: op.refused for op in OPS if op.refused is not None}

# Functions of floats whose result is a boolean: never differentiable, nothing to refuse.
BOOLEAN = {op.name for op in OPS if op.boolean}

# How many operands each primitive takes when called as a function (the rest: len(PARTIALS[op])).
ARITY = {op.name: op.arity for op in OPS if op.arity is not None}

# Functions returning a tuple: refused where they are called, whatever their activity.
TUPLE_RESULT = {op.name for op in OPS if op.tuple_result}


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
