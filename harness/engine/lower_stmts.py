"""Lowering statements: assignments (names get SSA versions), augmented assignments, `if` with
phi moves at the join, expression statements; loops go to lower_loops.py. Functions over the
lowering's state (lower_state.py)."""
from __future__ import annotations

import ast

from . import lower_calls as calls, lower_exprs as exprs, lower_loops as loops
from .control import RET
from .ir import If, Lit, Load, Prim, Special, Store
from .lower_exprs import BINOPS
from .lower_state import LoweringState
from .types import infer_prim_type


def block(st: LoweringState, stmts: list) -> list:
    out = []
    for s in stmts:
        st.line = s.lineno
        stmt(st, s, out)
    return out


def stmt(st: LoweringState, s, out):
    if isinstance(s, ast.Assign):
        if len(s.targets) != 1:
            raise st.err(s, "chained assignment `a = b = ...` is not supported; split it")
        assign(st, s.targets[0], s.value, out)
    elif isinstance(s, ast.AnnAssign) and s.value is not None:
        assign(st, s.target, s.value, out)
    elif isinstance(s, ast.AugAssign):
        op = BINOPS.get(type(s.op))
        if op is None:
            raise st.err(s, f"augmented operator {type(s.op).__name__} is not supported")
        if isinstance(s.target, ast.Name):
            cur = exprs.name_atom(st, s.target)
            rhs = exprs.expr(st, s.value, out)
            new = st.fresh(s.target.id)
            st.emit_assign(out, new, Prim(op, (cur, rhs)))
            st.env[s.target.id] = new
        elif isinstance(s.target, ast.Subscript):
            array, index = exprs.subscript(st, s.target, out)
            old = st.emit_assign(out, st.temp(), Load(array, index))
            rhs = exprs.expr(st, s.value, out)
            new = st.emit_assign(out, st.temp(), Prim(op, (old, rhs)))
            out.append(Store(array, index, new, st.line))
        else:
            raise st.err(s, "unsupported augmented-assignment target")
    elif isinstance(s, ast.If):
        cond = exprs.expr(st, s.test, out)
        if_stmt(st, cond, lambda o: o.extend(block(st, s.body)),
                lambda o: o.extend(block(st, s.orelse)), out)
    elif isinstance(s, ast.Expr):
        if isinstance(s.value, ast.Constant):          # docstring or bare literal
            return
        if isinstance(s.value, ast.Call):
            calls.call(st, s.value, out, nvalues=-1)
            return
        raise st.err(s, f"statement `{ast.unparse(s).strip()}` is not supported by the AD transform yet")
    elif isinstance(s, ast.Pass):
        return
    elif isinstance(s, ast.For):
        loops.for_loop(st, s, out)
    elif isinstance(s, ast.While):
        loops.while_loop(st, s, out)
    elif isinstance(s, (ast.Break, ast.Continue)):
        raise st.err(s, f"`{type(s).__name__.lower()}` outside a loop body")
    else:
        raise st.err(s, f"{type(s).__name__} statements are not supported by the AD transform")


def assign(st: LoweringState, target, value, out):
    if isinstance(target, ast.Name) and isinstance(value, ast.Call) \
            and (calls.resolve_call(st, value) or (None, None))[1] in ("cuda.shared.array", "cuda.local.array"):
        return calls.alloc(st, target.id, value, out)
    if isinstance(target, ast.Name):
        if target.id in st.arrays:
            raise st.err(target, f"cannot rebind array '{target.id}'")
        new = st.fresh(target.id)
        exprs.expr(st, value, out, target=new)
        st.env[target.id] = new
    elif isinstance(target, ast.Subscript):
        array, index = exprs.subscript(st, target, out)
        v = exprs.expr(st, value, out)
        out.append(Store(array, index, v, st.line))
    elif isinstance(target, ast.Tuple):
        if exprs.is_call_to(st, value, "cuda", "grid") or exprs.is_call_to(st, value, "cuda", "gridsize"):
            kind = "grid" if exprs.is_call_to(st, value, "cuda", "grid") else "gsize"
            n = exprs.literal_int(st, value.args[0])
            if n != len(target.elts):
                raise st.err(target, f"cuda.{value.func.attr}({n}) unpacked into {len(target.elts)} names")
            atoms = [st.emit_assign(out, st.temp(), Special(f"{kind}.{k}")) for k in range(n)]
        elif isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
            atoms = [exprs.expr(st, v, out) for v in value.elts]
        elif isinstance(value, ast.Call):
            atoms = calls.call(st, value, out, nvalues=len(target.elts), as_list=True)
            if len(atoms) != len(target.elts):
                raise st.err(target, f"call returns {len(atoms)} values, unpacked into {len(target.elts)}")
        else:
            raise st.err(target, "tuple assignment needs a tuple of the same length or cuda.grid(n)")
        for t, a in zip(target.elts, atoms):
            if not isinstance(t, ast.Name):
                raise st.err(t, "only names may be unpacked into")
            new = st.fresh(t.id)
            st.emit_assign(out, new, Prim("copy", (a,)))
            st.env[t.id] = new
    else:
        raise st.err(target, "unsupported assignment target")


def if_stmt(st: LoweringState, cond, then_fn, else_fn, out):
    """Lower an if/else given callbacks that lower each branch; add phi moves at the join."""
    line = st.line
    before = dict(st.env)
    body: list = []
    st.depth_ctl += 1
    then_fn(body)
    after_then = dict(st.env)
    st.env = dict(before)
    orelse: list = []
    else_fn(orelse)
    st.depth_ctl -= 1
    after_else = dict(st.env)
    phis = []
    merged = dict(before)
    for var in sorted(set(after_then) | set(after_else)):
        a, b = after_then.get(var), after_else.get(var)
        if (a is None) != (b is None) and var.startswith(RET):
            # a returned value set on one path only (`if c: return a` ... `return b`): the
            # other path has not returned yet and sets it later; it holds a typed zero until then
            missing = body if a is None else orelse
            zero = st.emit_assign(missing, st.fresh(var), Prim(f"cast_{st.types[a or b]}", (Lit(0),)))
            a, b = a or zero, b or zero
        if a is None or b is None:        # defined on one path only: stays branch-local
            continue
        if a == b:
            merged[var] = a
            continue
        joined = st.fresh(var)
            # a phi's type unifies its sources (e.g. int on one path, float on the other)
        st.types[joined] = infer_prim_type("add", [st.types[a], st.types[b]]) \
            if st.types[a] != st.types[b] else st.types[a]
        phis.append((joined, a, b))
        merged[var] = joined
    st.env = merged
    st.line = line
    out.append(If(cond, body, orelse, line, phis))
