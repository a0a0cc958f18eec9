"""Python source text of IR atoms, expressions and instantiated derivative rules."""
from __future__ import annotations

import ast
import math

from harness.engine.analyses.activity import SHUFFLES
from harness.engine.ir.ssa import Lit, Load, Special
from harness.engine.rules.table import CONSTANTS, PARTIALS

PRIM_SYNTAX = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "floordiv": "{0} // {1}", "mod": "{0} % {1}", "pow": "{0} ** {1}", "neg": "-{0}",
    "lt": "{0} < {1}", "le": "{0} <= {1}", "gt": "{0} > {1}", "ge": "{0} >= {1}",
    "eq": "{0} == {1}", "ne": "{0} != {1}", "not": "not {0}", "copy": "{0}",
    "bitand": "{0} & {1}", "bitor": "{0} | {1}", "bitxor": "{0} ^ {1}", "lshift": "{0} << {1}",
    "rshift": "{0} >> {1}", "invert": "~{0}", "abs": "abs({0})", "min": "min({0}, {1})",
    "max": "max({0}, {1})", "cast_bool": "bool({0})", "trunc_int": "int({0})",
    "cast_int64": "int64({0})",
    "threadfence": "cuda.threadfence()", "threadfence_block": "cuda.threadfence_block()",
    "threadfence_system": "cuda.threadfence_system()",
    "cbrt": "cbrt_f64({0})", "cbrtf": "cbrt_f32({0})",        # defined by libm.CBRT_PRELUDE
}


_SPECIAL = {"tid": "cuda.threadIdx", "bid": "cuda.blockIdx", "bdim": "cuda.blockDim", "gdim": "cuda.gridDim"}


_AXES = "xyz"


def atom(a) -> str:
    if isinstance(a, Lit):
        if hasattr(a.value, "item") and not isinstance(a.value, (bool, int)) and type(a.value) is not float:
            a = Lit(a.value.item())       # a numpy scalar prints as np.float64(...), a name the module lacks
        if isinstance(a.value, float) and not math.isfinite(a.value):
            return "math.inf" if a.value > 0 else ("-math.inf" if a.value < 0 else "math.nan")
        return repr(a.value)
    return a


def index_text(index) -> str:
    return ", ".join(atom(a) for a in index)


def expr_text(e) -> str:
    if isinstance(e, Load):
        return f"{e.array}[{index_text(e.index)}]"
    if isinstance(e, Special):
        kind, _, rest = e.name.partition(".")
        if kind == "grid":
            k = int(rest)
            return "cuda.grid(1)" if k == 0 else \
                f"cuda.blockIdx.{_AXES[k]} * cuda.blockDim.{_AXES[k]} + cuda.threadIdx.{_AXES[k]}"
        if kind == "gsize":
            k = int(rest)
            return f"cuda.gridDim.{_AXES[k]} * cuda.blockDim.{_AXES[k]}"
        if kind == "shape":
            arr, _, k = rest.partition(".")
            return f"{arr}.shape[{k}]"
        if kind == "size":
            return f"{rest}.size"
        if kind == "laneid":
            return "cuda.laneid"
        return f"{_SPECIAL[kind]}.{rest}"
    args = [atom(a) for a in e.args]
    if e.op in SHUFFLES:
        return f"cuda.{e.op}_sync({', '.join(args)})"
    if e.op == "custom":
        return args[0]                        # the value came from the rule's primal body
    if e.op in PRIM_SYNTAX:
        return PRIM_SYNTAX[e.op].format(*args)
    if e.op == "round":                       # round(x) or round(x, ndigits)
        return f"round({', '.join(args)})"
    if e.op.startswith("cast_"):
        return f"{e.op[5:]}({', '.join(args)})"
    return f"math.{e.op}({', '.join(args)})"


class _Partial(ast.NodeTransformer):
    """Instantiate a rule's partial derivative: operands, result, typed literals, helpers."""

    def __init__(self, names: dict[str, str], ftype: str):
        self.names, self.ftype = names, ftype

    def visit_Name(self, node):
        if node.id in self.names:             # an operand's text, parsed: a literal stays a literal
            return ast.parse(self.names[node.id], mode="eval").body
        if node.id in CONSTANTS:
            return self.literal(CONSTANTS[node.id])
        return node

    def visit_Constant(self, node):
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return self.literal(node.value)
        return node

    def literal(self, value):
        return ast.Call(ast.Name(self.ftype, ast.Load()), [ast.Constant(float(value))], [])

    def visit_Call(self, node):
        self.generic_visit(node)
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name == "sign":                    # sign(x): 1, -1, or 0 at 0
            x = node.args[0]
            one, zero = self.literal(1), self.literal(0)
            return ast.IfExp(ast.Compare(x, [ast.Gt()], [ast.Constant(0)]), one,
                             ast.IfExp(ast.Compare(x, [ast.Lt()], [ast.Constant(0)]),
                                       ast.UnaryOp(ast.USub(), self.literal(1)), zero))
        if name is not None:
            node.func = ast.Attribute(ast.Name("math", ast.Load()), name, ast.Load())
        return node


class _ConstantPower(ast.NodeTransformer):
    """`x ** c` with a constant exponent, as the cheaper expression it equals: a rule's
    `y * x ** (y - 1)` for `x ** 1.5` is `1.5 * sqrt(x)`, not a call to pow (dozens of
    double-precision instructions on a GPU). The forms agree to rounding."""

    def __init__(self, ftype: str):
        self.ftype = ftype

    def constant(self, node):
        """The value of a constant expression (literals, typed literals, + - *), else None."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == self.ftype
                and len(node.args) == 1):
            return self.constant(node.args[0])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.constant(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = self.constant(node.left), self.constant(node.right)
            if a is None or b is None:
                return None
            return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
        return None

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Pow):
            return node
        c, x = self.constant(node.right), node.left
        one = ast.Call(ast.Name(self.ftype, ast.Load()), [ast.Constant(1.0)], [])
        sqrt = ast.Call(ast.Attribute(ast.Name("math", ast.Load()), "sqrt", ast.Load()), [x], [])
        forms = {0.0: one, 1.0: x, 2.0: ast.BinOp(x, ast.Mult(), x), -1.0: ast.BinOp(one, ast.Div(), x),
                 0.5: sqrt, -0.5: ast.BinOp(one, ast.Div(), sqrt)}
        return forms.get(c, node)


def costly(text: str) -> bool:
    """Whether a partial's source text calls a math function, divides or raises to a power: worth
    computing once into a register next to its primal (emit_adjoints.hoist_partials)."""
    for node in ast.walk(ast.parse(text, mode="eval")):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Pow, ast.Mod, ast.FloorDiv)):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return True
    return False


def partial_text(op: str, k: int, args, result: str, ftype: str, partials=None, rules=None) -> str:
    """d op / d arg_k as source text; `rules` replaces the rule table (rules.PARTIALS)."""
    if op == "custom":                        # partials were computed by the user's rule
        return atom(partials[k - 1])
    template = (PARTIALS if rules is None else rules)[op][k]
    names = {"r": result}
    for name, a in zip(("x", "y"), args):
        names[name] = atom(a)
    tree = _Partial(names, ftype).visit(ast.parse(template, mode="eval"))
    return ast.unparse(_ConstantPower(ftype).visit(tree).body)

