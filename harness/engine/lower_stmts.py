"""Lowering statements: assignments (names get SSA versions), augmented assignments, `if` with
phi moves at the join, expression statements; loops go to lower_loops.py. Functions over the
lowering's state (lower_state.py)."""
from __future__ import annotations

import ast

from . import lower_calls as calls, lower_exprs as exprs, lower_local_functions as local_functions, lower_loops as loops
from .control import RET
from .ir import If, Lit, Load, Prim, Special, Store
from .lower_exprs import BINOPS
from .lower_state import LoweringState
from .numba_limits import numba_refusal
from .types import infer_prim_type


def block(st: LoweringState, stmts: list) -> list:
    out = []
    for k, s in enumerate(stmts):
        st.line = s.lineno
        if array_binding(st, s):
            bind_array(st, s, stmts[k + 1:], out)
            break
        stmt(st, s, out)
    return out


def _array_valued(st: LoweringState, node) -> bool:
    if isinstance(node, ast.Name):
        return node.id in st.arrays and node.id not in st.env
    if isinstance(node, ast.Subscript):
        return exprs.is_view(st, node)
    return isinstance(node, ast.IfExp) and _array_valued(st, node.body) and _array_valued(st, node.orelse)


def array_binding(st: LoweringState, s) -> bool:
    """`data = buf_0`, `data = buf_0 if c else buf_1`, `row = sm[w, :]`: a name bound to an array."""
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
        and s.targets[0].id not in st.env and _array_valued(st, s.value)


def bind_array(st: LoweringState, s, rest: list, out) -> None:
    """Lower the rest of a block with a name bound to an array. A conditional choice lowers the
    rest once per choice (`if c: <rest, data is buf_0> else: <rest, data is buf_1>`), so every
    access names its array statically and the aliasing and ownership analyses see each one.
    After the block the name is unbound: a use after the `if` or loop that rebound it would need
    the run-time choice, and is refused (exprs.subscript says why)."""
    name, value = s.targets[0].id, s.value
    saved, saved_views = dict(st.arrays), dict(st.views)
    if isinstance(value, (ast.Name, ast.Subscript)):
        if isinstance(value, ast.Subscript):          # a row: `sm_this = sm_partials[warpid, :]`
            st.arrays[name], st.views[name] = exprs.view(st, value, out)
        else:
            st.arrays[name] = st.arrays[value.id]
            st.views.pop(name, None)
            if value.id in st.views:
                st.views[name] = st.views[value.id]
        st.expired.pop(name, None)
        out.extend(block(st, rest))
    else:
        cond = exprs.expr(st, value.test, out)

        def choice(node):
            def lower(o):
                inner = ast.copy_location(ast.Assign([s.targets[0]], node), s)
                o.extend(block(st, [inner] + rest))
            return lower
        if_stmt(st, cond, choice(value.body), choice(value.orelse), out)
    st.arrays, st.views = saved, saved_views
    st.arrays.pop(name, None)
    st.views.pop(name, None)
    st.expired[name] = s.lineno


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
        raise st.err(s, numba_refusal(s) or
                     f"statement `{ast.unparse(s).strip()}` is not supported by the AD transform yet")
    elif isinstance(s, ast.Pass):
        return
    elif isinstance(s, ast.For):
        loops.for_loop(st, s, out)
    elif isinstance(s, ast.While):
        loops.while_loop(st, s, out)
    elif isinstance(s, (ast.Break, ast.Continue)):
        raise st.err(s, f"`{type(s).__name__.lower()}` outside a loop body")
    elif isinstance(s, ast.FunctionDef):
        local_functions.define(st, s)
    else:
        raise st.err(s, numba_refusal(s) or f"{type(s).__name__} statements are not supported by the AD transform")


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
    elif isinstance(target, (ast.Tuple, ast.List)):
        # Python's order: the whole right side first, then each target from left to right
        pairs = []
        unpack_values(st, target, value, out, pairs)
        for t, a in pairs:
            assign_atom(st, t, a, out)
    else:
        raise st.err(target, "unsupported assignment target")


def unpack_values(st: LoweringState, target, value, out, pairs: list) -> None:
    """Evaluate `value` for the tuple `target`, appending (leaf target, atom) pairs in order:
    literal tuples (nested ones too), cuda.grid(n)/gridsize(n), and calls returning values."""
    n = len(target.elts)
    if any(isinstance(t, ast.Starred) for t in target.elts):
        raise st.err(target, numba_refusal(target))
    if exprs.is_call_to(st, value, "cuda", "grid") or exprs.is_call_to(st, value, "cuda", "gridsize"):
        kind = "grid" if exprs.is_call_to(st, value, "cuda", "grid") else "gsize"
        k = exprs.literal_int(st, value.args[0])
        if k != n:
            raise st.err(target, f"cuda.{value.func.attr}({k}) unpacked into {n} names")
        atoms = [st.emit_assign(out, st.temp(), Special(f"{kind}.{j}")) for j in range(k)]
    elif isinstance(value, (ast.Tuple, ast.List)):
        if len(value.elts) != n:
            raise st.err(target, f"{len(value.elts)} values unpacked into {n} targets")
        for t, v in zip(target.elts, value.elts):
            if isinstance(t, (ast.Tuple, ast.List)):
                unpack_values(st, t, v, out, pairs)
            else:
                pairs.append((t, exprs.expr(st, v, out)))
        return
    elif isinstance(value, ast.Call):
        atoms = calls.call(st, value, out, nvalues=n, as_list=True)
        if len(atoms) != n:
            raise st.err(target, f"call returns {len(atoms)} values, unpacked into {n}")
    else:
        raise st.err(target, "tuple assignment needs a tuple of the same length, a call returning "
                     "that many values, an array's shape or cuda.grid(n)")
    for t, a in zip(target.elts, atoms):
        if isinstance(t, (ast.Tuple, ast.List)):
            raise st.err(t, "a nested target needs a nested tuple of values")
        pairs.append((t, a))


def assign_atom(st: LoweringState, t, a, out) -> None:
    """Assign an already computed atom to a name or an array element."""
    if isinstance(t, ast.Name):
        if t.id in st.arrays:
            raise st.err(t, f"cannot rebind array '{t.id}' to a value")
        new = st.fresh(t.id)
        st.emit_assign(out, new, Prim("copy", (a,)))
        st.env[t.id] = new
    elif isinstance(t, ast.Subscript):
        array, index = exprs.subscript(st, t, out)
        out.append(Store(array, index, a, st.line))
    else:
        raise st.err(t, "only names and array elements may be unpacked into")


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
