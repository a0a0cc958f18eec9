"""Branches for the subexpressions Python evaluates lazily, before the adapters translate a body.

Python evaluates one side of `a if c else b`, and the operands of `and`, `or` and of a chained
comparison only until the result is known. Warp's `wp.where` and Taichi's `ti.select` evaluate
both sides, and both systems evaluate every operand of their logical operators. Evaluating what
Python skips is harmless only where it can neither fault nor poison an adjoint, and often it can:
- a read of an array (`x[r, c] if r < m else 0.0`, `i < n and x[i] > 0`) runs past the bounds the
  condition guards, and in reverse adds into the adjoint there;
- a device function or an atomic has effects of its own; an integer `//` or `%` may divide by zero;
- in reverse the side not taken gets a zero adjoint, which its partials multiply: where one is
  infinite (`1.0 / x if x != 0.0 else 0.0` at x = 0) the product is NaN.

`lower_lazy` rewrites a function body so that each such subexpression is a branch: a fresh local,
assigned in an if/else statement placed before the statement that used it. A `while` condition
that needs one becomes `while True:` whose body starts with the branch and `if not c: break`.
What the statement evaluates before the branch keeps its order: an earlier operand is first moved
into a local of its own where it has effects or reads memory that the branch's effects could change.
The rewrite is Python to Python, so it says what numba.cuda runs; the translator then reads the new
body like any other. Names of the new locals come from the source position of the expression they
replace, so every translation of a body names them alike.
"""
from __future__ import annotations

import ast
import math
from typing import Callable

from harness.engine.frontend import loop_else

# A call's kind, from the translator (which resolves names): "cast" (float32(x), int(x)),
# "pure" (math functions, min/max/abs, len, cuda.grid: no effects, no memory read), or None
# (device and inner functions, atomics, barriers: anything that may read or write memory).
CallKind = Callable[[ast.Call], "str | None"]


def lower_lazy(stmts: list, call_kind: CallKind) -> list:
    """`stmts` with every lazily evaluated subexpression that must not run eagerly made a branch."""
    return _Lowering(call_kind).block(stmts)


def eager_choice(e: ast.IfExp, call_kind: CallKind) -> bool:
    """Whether both sides of `e` may be evaluated, as a select does."""
    lowering = _Lowering(call_kind)
    return lowering.value_eager(e.body) and lowering.value_eager(e.orelse)


def eager_logic(e: ast.BoolOp, call_kind: CallKind) -> bool:
    """Whether every operand of `e` may be evaluated, as the systems' logical operators do."""
    return all(_Lowering(call_kind).test_eager(v) for v in e.values[1:])


class _Lowering:
    def __init__(self, call_kind: CallKind):
        self.call_kind = call_kind

    # ---------------------------------------------------------------- what may run eagerly
    def value_eager(self, e) -> bool:
        """A side of `a if c else b` that may be evaluated where Python does not: no fault, no
        effect, and a zero adjoint reaches its inputs as zero: sums and negations of atoms, and
        their products with (quotients by) finite constants, whose partials are those constants."""
        if isinstance(e, (ast.Constant, ast.Name, ast.Attribute)) or self._shape_lookup(e):
            return True
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.value_eager(e.operand)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
            return self.value_eager(e.left) and self.value_eager(e.right)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
            return (_finite(e.left) and self.value_eager(e.right)) or (_finite(e.right) and self.value_eager(e.left))
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Div):
            return _finite(e.right) and e.right.value != 0 and self.value_eager(e.left)
        if isinstance(e, ast.Call) and self.call_kind(e) == "cast" and len(e.args) == 1 and not e.keywords:
            return self.value_eager(e.args[0])
        return False

    def test_eager(self, e) -> bool:
        """An operand of `and`/`or` (a truth value: no derivative flows through it) that may be
        evaluated where Python does not: no fault, no effect, no memory read."""
        if isinstance(e, (ast.Constant, ast.Name, ast.Attribute)) or self._shape_lookup(e):
            return True
        if isinstance(e, ast.UnaryOp):
            return self.test_eager(e.operand)
        if isinstance(e, ast.BinOp):
            divides = isinstance(e.op, (ast.FloorDiv, ast.Mod))
            nonzero = isinstance(e.right, ast.Constant) and e.right.value not in (0, 0.0, False)
            return (not divides or nonzero) and self.test_eager(e.left) and self.test_eager(e.right)
        if isinstance(e, ast.Compare):
            return all(self.test_eager(x) for x in [e.left, *e.comparators])
        if isinstance(e, ast.BoolOp):
            return all(self.test_eager(x) for x in e.values)
        if isinstance(e, ast.IfExp):
            return self.test_eager(e.test) and self.value_eager(e.body) and self.value_eager(e.orelse)
        if isinstance(e, ast.Call):
            return self.call_kind(e) in ("cast", "pure") and not e.keywords and all(self.test_eager(a) for a in e.args)
        return False

    @staticmethod
    def _shape_lookup(e) -> bool:
        return isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) and e.value.attr == "shape"

    def needs_branch(self, e) -> bool:
        """Whether `e` holds a lazy subexpression that must become a branch."""
        for n in ast.walk(e):
            if isinstance(n, ast.IfExp) and not (self.value_eager(n.body) and self.value_eager(n.orelse)):
                return True
            if isinstance(n, ast.BoolOp) and not all(self.test_eager(v) for v in n.values[1:]):
                return True
            if isinstance(n, ast.Compare) and self._lazy_chain(n):
                return True
        return False

    def _lazy_chain(self, e: ast.Compare) -> bool:
        """A chained comparison to write out: a later operand may not run eagerly, or a middle one,
        which the translation of a chain repeats, has effects."""
        return len(e.ops) > 1 and (not all(self.test_eager(v) for v in e.comparators[1:])
                                   or any(self.has_effects(v) for v in e.comparators[:-1]))

    def has_effects(self, e) -> bool:
        return any(isinstance(n, ast.Call) and self.call_kind(n) not in ("cast", "pure") for n in ast.walk(e))

    def reads_memory(self, e) -> bool:
        return self.has_effects(e) or any(isinstance(n, ast.Subscript) and not self._shape_lookup(n)
                                          for n in ast.walk(e))

    # ---------------------------------------------------------------- statements
    def block(self, stmts: list) -> list:
        out = []
        for s in stmts:
            out += self.stmt(s)
        return out

    def stmt(self, s) -> list:
        if isinstance(s, ast.If):
            pre, test = self.expr(s.test)
            return pre + [_like(s, ast.If(test, self.block(s.body), self.block(s.orelse)))]
        if isinstance(s, ast.For):
            pre, it = self.expr(s.iter)
            return pre + [_like(s, ast.For(s.target, it, self.block(s.body), self.block(s.orelse),
                                           getattr(s, "type_comment", None)))]
        if isinstance(s, ast.While):
            return self._while(s)
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if s.value is None:
                return [s]
            # Python evaluates the value, then each target's array and index
            pre, parts = self.sequence([s.value, *[self._target_index(t) for t in targets]])
            if not pre:
                return [s]
            value, indices = parts[0], parts[1:]
            targets = [self._with_index(t, k) for t, k in zip(targets, indices)]
            if isinstance(s, ast.Assign):
                return pre + [_like(s, ast.Assign(targets, value))]
            return pre + [_like(s, ast.AnnAssign(targets[0], s.annotation, value, s.simple))]
        if isinstance(s, ast.AugAssign):
            # the target's index, then the value
            pre, (index, value) = self.sequence([self._target_index(s.target), s.value])
            if not pre:
                return [s]
            return pre + [_like(s, ast.AugAssign(self._with_index(s.target, index), s.op, value))]
        if isinstance(s, ast.Return) and s.value is not None:
            pre, value = self.expr(s.value)
            return pre + [_like(s, ast.Return(value))]
        if isinstance(s, ast.Expr):
            pre, value = self.expr(s.value)
            return pre + [_like(s, ast.Expr(value))]
        return [s]                  # pass, break, continue, inner function definitions (lowered when lifted)

    def _while(self, s: ast.While) -> list:
        if not self.needs_branch(s.test):
            return [_like(s, ast.While(s.test, self.block(s.body), self.block(s.orelse)))]
        if s.orelse:
            # the else block runs when the condition ends the loop, which now breaks: a flag on the
            # loop's own breaks tells them apart (the translator's plain form of loop-else)
            plain = loop_else.without_else(s, lambda: f"_loop{s.lineno}_{s.col_offset}_broke")
            return self.block(plain)
        pre, test = self.expr(s.test)
        stop = _like(s, ast.If(_like(s, ast.UnaryOp(ast.Not(), test)), [_like(s, ast.Break())], []))
        return [_like(s, ast.While(_like(s, ast.Constant(True)), pre + [stop] + self.block(s.body), []))]

    @staticmethod
    def _target_index(t):
        """The part of an assignment target evaluated after the value: a subscript's index."""
        return t.slice if isinstance(t, ast.Subscript) else None

    @staticmethod
    def _with_index(t, index):
        if not isinstance(t, ast.Subscript) or index is t.slice:
            return t
        return _like(t, ast.Subscript(t.value, index, t.ctx))

    # ---------------------------------------------------------------- expressions
    def sequence(self, exprs: list) -> tuple[list, list]:
        """Expressions Python evaluates in this order (None: nothing), lowered: the statements to
        run first and the expressions that stay. An expression evaluated before one that needs a
        branch is bound to a local first where the order could show: it has effects, or it reads
        memory the branch's effects could change (a tuple display's items are bound one by one)."""
        lowered = [self.expr(e) for e in exprs]
        if not any(pre for pre, _ in lowered):
            return [], list(exprs)
        out_pre, out = [], []
        for k, (pre, new) in enumerate(lowered):
            later = [x for x in exprs[k + 1:] if x is not None and self.needs_branch(x)]
            binds, new = self._settled(new, later) if later else ([], new)
            out_pre += pre + binds
            out.append(new)
        return out_pre, out

    def _settled(self, e, later: list) -> tuple[list, object]:
        """`e` as it may be evaluated after `later`: itself, or a local bound to it here."""
        if e is None or isinstance(e, (ast.Name, ast.Constant)):
            return [], e
        if not (self.has_effects(e) or (self.reads_memory(e) and any(self.has_effects(x) for x in later))):
            return [], e
        if isinstance(e, ast.Tuple):
            binds, items = [], []
            for x in e.elts:
                more, x = self._settled(x, later)
                binds += more
                items.append(x)
            return binds, _like(e, ast.Tuple(items, ast.Load()))
        name = _name_for(e, "early")
        return [_assign(e, name, e)], _like(e, ast.Name(name, ast.Load()))

    def expr(self, e) -> tuple[list, object]:
        if e is None or not self.needs_branch(e):
            return [], e
        if isinstance(e, ast.IfExp):
            return self._if_exp(e)
        if isinstance(e, ast.BoolOp):
            return self._bool_op(e)
        if isinstance(e, ast.Compare) and self._lazy_chain(e):
            return self._chain(e)
        slots = [(f, k) for f in _FIELDS.get(type(e), ()) for k in
                 (range(len(getattr(e, f))) if isinstance(getattr(e, f), list) else (None,))]
        pre, parts = self.sequence([getattr(e, f) if k is None else getattr(e, f)[k] for f, k in slots])
        new = type(e)(**{f: (list(getattr(e, f)) if isinstance(getattr(e, f), list) else getattr(e, f))
                         for f in e._fields})
        for (f, k), part in zip(slots, parts):
            if k is None:
                setattr(new, f, part)
            else:
                getattr(new, f)[k] = part
        return pre, _like(e, new)

    def _if_exp(self, e: ast.IfExp):
        pre, test = self.expr(e.test)
        if self.value_eager(e.body) and self.value_eager(e.orelse):
            return pre, _like(e, ast.IfExp(test, e.body, e.orelse))
        name = _name_for(e, "choice")
        body_pre, body = self.expr(e.body)
        else_pre, orelse = self.expr(e.orelse)
        branch = _like(e, ast.If(test, body_pre + [_assign(e, name, body)], else_pre + [_assign(e, name, orelse)]))
        return pre + [branch], _like(e, ast.Name(name, ast.Load()))

    def _bool_op(self, e: ast.BoolOp):
        """`a and b and c` as a flag: flag = a; if flag: flag = b; if flag: flag = c (`or` tests
        `not flag`), each operand's truth value, as the translator's logical operators give."""
        name = _name_for(e, "logic")
        flag = lambda: _like(e, ast.Name(name, ast.Load()))
        go_on = lambda: flag() if isinstance(e.op, ast.And) else _like(e, ast.UnaryOp(ast.Not(), flag()))
        tail: list = []
        for v in reversed(e.values[1:]):
            tail = self.block([_assign(e, name, _truth(v))]) + ([_like(e, ast.If(go_on(), tail, []))] if tail else [])
        return self.block([_assign(e, name, _truth(e.values[0]))]) + [_like(e, ast.If(go_on(), tail, []))], flag()

    def _chain(self, e: ast.Compare):
        """`a < b < c` as `a < b and b < c`, each operand evaluated once and in order, the later
        ones only while the comparisons before them hold: a flag, as for `and`."""
        name = _name_for(e, "logic")
        flag = lambda: _like(e, ast.Name(name, ast.Load()))
        operands, binds = [], []
        last = len(e.comparators)
        for k, x in enumerate([e.left, *e.comparators]):
            if k == last or isinstance(x, (ast.Name, ast.Constant)):
                operands.append(x)
                binds.append([])
            else:
                local = _name_for(x, "operand")
                operands.append(_like(x, ast.Name(local, ast.Load())))
                binds.append([_assign(x, local, x)])
        tail: list = []
        for k in reversed(range(len(e.ops))):
            cmp = _like(e, ast.Compare(operands[k], [e.ops[k]], [operands[k + 1]]))
            steps = (binds[0] if k == 0 else []) + binds[k + 1] + [_assign(e, name, cmp)]
            tail = self.block(steps) + ([_like(e, ast.If(flag(), tail, []))] if tail else [])
        return tail, flag()


def _finite(e) -> bool:
    """A number literal other than inf and nan."""
    return isinstance(e, ast.Constant) and type(e.value) in (int, float) and math.isfinite(e.value)


def _truth(v):
    """v as a truth value, as `and`/`or` test it: itself if a comparison or logical operator,
    else `not not v` (which the translator gives as its condition, `x != 0.0` for a float)."""
    if isinstance(v, (ast.Compare, ast.BoolOp)) or (isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not)):
        return v
    return _like(v, ast.UnaryOp(ast.Not(), _like(v, ast.UnaryOp(ast.Not(), v))))


def _assign(at, name: str, value):
    return _like(at, ast.Assign([_like(at, ast.Name(name, ast.Store()))], value))


def _name_for(e, what: str) -> str:
    """A local named after the expression's place in the source (two expressions never share a span)."""
    span = (getattr(e, "lineno", 0), getattr(e, "col_offset", 0), getattr(e, "end_lineno", 0),
            getattr(e, "end_col_offset", 0))
    return f"_{what}" + "_".join(str(p) for p in span)


def _like(old, new):
    ast.copy_location(new, old)
    return ast.fix_missing_locations(new)


# the fields of an expression Python evaluates, in its order (others, like a call's function name
# or an attribute's name, hold no lazy subexpression the adapters translate)
_FIELDS = {ast.BinOp: ("left", "right"), ast.UnaryOp: ("operand",), ast.Call: ("args",),
           ast.Subscript: ("value", "slice"), ast.Tuple: ("elts",), ast.Attribute: ("value",),
           ast.Compare: ("left", "comparators")}
