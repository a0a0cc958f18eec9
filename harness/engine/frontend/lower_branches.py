"""Lowering a two-way branch: each side lowered by a callback from the same names, then phi moves
at the join. Used by `if` statements, conditional expressions and `and`/`or`.
"""
from __future__ import annotations

import ast

from harness.engine.frontend import lower_local_functions as local_functions
from harness.engine.frontend.control import RET
from harness.engine.ir.ssa import If, Lit, Prim
from harness.engine.frontend.lower_state import LoweringState
from harness.engine.frontend.read_after import read_after
from harness.engine.ir.types import infer_prim_type

# scalar types a one-path name may be joined at with a typed zero
_ZERO_TYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64"}


def if_stmt(st: LoweringState, cond, then_fn, else_fn, out, node=None):
    """Lower an if/else given callbacks that lower each branch; add phi moves at the join.
    `node`: the `if` statement, when it is one (a scalar it binds on one path joins there if read after it)."""
    line = st.line
    before = dict(st.env)
    functions = st.local_functions
    body: list = []
    st.depth_ctl += 1
    then_fn(body)
    after_then = dict(st.env)
    then_functions, st.local_functions = st.local_functions, functions
    st.env = dict(before)
    orelse: list = []
    else_fn(orelse)
    st.depth_ctl -= 1
    after_else = dict(st.env)
    st.local_functions = local_functions.after_branches(functions, then_functions, st.local_functions)
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
        elif (a is None) != (b is None) and node is not None and var in st.user_names and var not in before \
                and st.types.get(a or b) in _ZERO_TYPES and _written(st, node) and read_after(st.src.tree, node, var):
            # a kernel's scalar bound on one path only (PyExaFMM: `if sub_width == width:
            # submatrixInd = ...`, read later under the same test): numba compiles it, the value
            # on the other path being unspecified; it joins here with a typed zero on that path
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


def _written(st: LoweringState, node) -> bool:
    """Whether `node` is an `if` of the kernel's source as written (not one the normal form made,
    such as the guard after an early return, whose bindings are the whole rest of the kernel)."""
    return any(n is node for n in ast.walk(st.src.tree))
