"""The adapters' branches for what Python evaluates lazily (harness/adapters/lazy.py).

The rewrite is Python to Python, so Python itself is the oracle: each function runs as written
and as rewritten, on arrays that record every read and raise past their bounds, with a device
function that records its calls; results, exceptions and the order of reads and calls must agree
on every input, and nothing lazy that may not run eagerly may be left."""
from __future__ import annotations

import ast
import itertools
import math
import textwrap

import pytest

from harness.adapters.lazy import eager_choice, eager_logic, lower_lazy


class Recorded:
    """An array that logs each read and, as a GPU read past the bounds would be, fails loudly."""

    def __init__(self, values, log):
        self.values, self.log = list(values), log

    def __getitem__(self, i):
        self.log.append(("read", i))
        if not 0 <= i < len(self.values):
            raise IndexError(i)
        return self.values[i]

    def __setitem__(self, i, v):
        self.log.append(("store", i, v))
        self.values[i] = v


def call_kind(call: ast.Call):
    """`f` is a device function (effects), math.* pure, float/int casts."""
    if isinstance(call.func, ast.Attribute) and ast.unparse(call.func.value) == "math":
        return "pure"
    if isinstance(call.func, ast.Name) and call.func.id in ("float", "int"):
        return "cast"
    return None


def lowered(source: str) -> tuple[ast.FunctionDef, ast.FunctionDef]:
    fdef = ast.parse(textwrap.dedent(source)).body[0]
    new = ast.FunctionDef(fdef.name, fdef.args, lower_lazy(fdef.body, call_kind), [], None)
    new.type_params = []
    return fdef, ast.fix_missing_locations(new)


def run(fdef: ast.FunctionDef, args: dict):
    log = []
    env = {"math": math}
    module = ast.fix_missing_locations(ast.Module([fdef], []))
    exec(compile(module, "<lazy>", "exec"), env)

    def f(v):                      # a device function with an effect: its calls are logged
        log.append(("call", v))
        return v * 2.0
    env["f"] = f
    given = {k: Recorded(v, log) if isinstance(v, list) else v for k, v in args.items()}
    try:
        result = env[fdef.name](**given)
    except (IndexError, ZeroDivisionError) as exc:
        result = type(exc).__name__
    arrays = {k: v.values for k, v in given.items() if isinstance(v, Recorded)}
    return result, log, arrays


def left_lazy(stmts) -> list[str]:
    """Lazy subexpressions left that the systems would evaluate eagerly although they may not."""
    found = []
    for n in ast.walk(ast.Module(stmts, [])):
        if isinstance(n, ast.IfExp) and not eager_choice(n, call_kind):
            found.append(ast.unparse(n))
        if isinstance(n, ast.BoolOp) and not eager_logic(n, call_kind):
            found.append(ast.unparse(n))
        if isinstance(n, ast.Compare) and len(n.ops) > 1 and not eager_logic(
                ast.BoolOp(ast.And(), [n.left, *n.comparators]), call_kind):
            found.append(ast.unparse(n))
    return found


FUNCTIONS = {
    "read under its bound": """
        def g(x, i, n):
            return x[i] if i < n else 0.0
        """,
    "reads, a division and and-ed conditions": """
        def g(x, i, n):
            return (x[i + 1] if i + 1 < n and x[i] > 0 else 1.0 / x[0]) * 2.0 + (3.0 if n > 2 else -1.0)
        """,
    "nested conditional expressions": """
        def g(x, i, n):
            return (x[i] if i < n else (x[0] if n > 0 else -1.0)) if i >= 0 else 5.0
        """,
    "or, and, not": """
        def g(x, i, n):
            return (i >= n or x[i] < 0.0) and not (i < n and x[i] > 1.0)
        """,
    "chained comparisons": """
        def g(x, i, n):
            return 0 <= i < n and 0.0 < x[i] < x[i % n] + 1.0 if n > 0 else False
        """,
    "a chain with reads in the middle": """
        def g(x, i, n):
            return -1.0 < x[i % n] < x[(i + 1) % n] < 2.0 if n > 0 else True
        """,
    "a device function's effects keep their order": """
        def g(x, i, n):
            return f(x[0]) + (f(x[i]) if i < n else 0.0) + f(1.0)
        """,
    "a read before a branch with effects": """
        def g(x, i, n):
            a = x[0] + (f(x[i]) if i < n else 0.0)
            return a
        """,
    "an elif condition": """
        def g(x, i, n):
            if i >= n:
                r = -1.0
            elif x[i] > 0.0 and x[(i + 1) % n] > 0.0:
                r = 1.0
            else:
                r = 0.0
            return r
        """,
    "a while condition": """
        def g(x, i, n):
            k = 0
            while k < n and x[k] > 0.0:
                k += 1
            return k
        """,
    "a while condition with continue and an else": """
        def g(x, i, n):
            k = 0
            s = 0.0
            while k < n and x[k] > -0.5:
                k += 1
                if x[k - 1] > 0.5:
                    continue
                if k == i:
                    break
                s += x[k - 1]
            else:
                s = -s
            return (k, s)
        """,
    "stores: the value, then the target's index": """
        def g(x, i, n):
            y = [0.0, 0.0, 0.0, 0.0]
            idx = [3, 2, 1, 0]
            y[idx[i] if i < 4 else 0] = x[i] if i < n else -1.0
            y[i % 4] += x[0] if n > 0 else 2.0
            return y
        """,
    "a loop bound and an expression statement": """
        def g(x, i, n):
            s = 0.0
            for j in range(int(x[0]) if n > 0 else 2):
                s += float(j)
            f(x[i] if i < n else 0.0)
            return s
        """,
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_the_rewrite_means_what_python_means(name):
    before, after = lowered(FUNCTIONS[name])
    assert not left_lazy(after.body), ast.unparse(after)
    for values, i, n in itertools.product(([0.7, -0.2, 1.5], [2.0, 0.3, 0.9], [-0.7, 0.0, 3.0]), range(-1, 6),
                                          range(0, 5)):
        args = {"x": values[:n] if n <= 3 else values + [0.6] * (n - 3), "i": i, "n": n}
        assert run(before, args) == run(after, args), (name, args, ast.unparse(after))


def test_reads_sit_inside_the_branch_that_guards_them():
    _, after = lowered(FUNCTIONS["read under its bound"])
    text = ast.unparse(after)
    branch = next(s for s in after.body if isinstance(s, ast.If))
    assert ast.unparse(branch.test) == "i < n" and "x[i]" in ast.unparse(branch.body) and \
        "x[i]" not in ast.unparse(branch.orelse), text


def test_what_may_run_eagerly_stays_a_select():
    """Atoms, sums and negations of them, products with finite constants, and casts keep their
    one-line select: a zero adjoint reaches their inputs as zero; a product of two values, a
    division by one or by zero, may not (0 * inf is NaN)."""
    source = """
        def g(x, a, b, i, n):
            u = a if i < n else -b
            v = float(i) + a if n > 2 else b - 1.0
            s = 0.01 * a if a > 0.0 else a / 4.0
            w = a * b if i < n else 0.0
            r = 1.0 if i < n else a / b
            q = 1.0 if i < n else a / 0.0
            return u + v + s + w + r + q
        """
    _, after = lowered(source)
    kept = [ast.unparse(n) for n in ast.walk(after) if isinstance(n, ast.IfExp)]
    assert kept == ["a if i < n else -b", "float(i) + a if n > 2 else b - 1.0", "0.01 * a if a > 0.0 else a / 4.0"]
    branches = [ast.unparse(s.test) for s in after.body if isinstance(s, ast.If)]
    assert branches == ["i < n", "i < n", "i < n"], ast.unparse(after)


def test_every_translation_names_the_new_locals_alike():
    a = ast.unparse(lowered(FUNCTIONS["reads, a division and and-ed conditions"])[1])
    b = ast.unparse(lowered(FUNCTIONS["reads, a division and and-ed conditions"])[1])
    assert a == b and "_choice" in a and "_logic" in a
