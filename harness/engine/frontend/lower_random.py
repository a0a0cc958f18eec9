"""Lowering of calls to numba's random number generator (numba.cuda.random, rules/rng.py): each
becomes one `Draw` statement on the state array, with the call's own arguments."""
from __future__ import annotations

import ast

from harness.engine.frontend.lower_dispatch import expression
from harness.engine.frontend.lower_exprs import element
from harness.engine.frontend.lower_resolve import resolve_call
from harness.engine.frontend.lower_state import LoweringState
from harness.engine.ir.ssa import Draw, Lit
from harness.engine.rules.rng import DRAWS, STATE_DTYPE_NAME

# what each function returns (None: nothing), and its parameters (numba.cuda.random's names)
RESULTS = {**DRAWS, "xoroshiro128p_next": "uint64", "xoroshiro128p_jump": None,
           "init_xoroshiro128p_state": None}
PARAMETERS = {"init_xoroshiro128p_state": ("states", "index", "seed")}


def is_random_call(st: LoweringState, node: ast.Call) -> bool:
    return (resolve_call(st, node) or ("", ""))[0] == "random"


def random_call(st: LoweringState, name: str, node: ast.Call, out):
    """`name(states, index[, seed])`, positionally or by keyword: the Draw, and its result's SSA
    name (None if it returns nothing)."""
    states, index_node, *seed = _arguments(st, name, node)
    if not (isinstance(states, ast.Name) and states.id in st.arrays) \
            or st.params[st.arrays[states.id]].dtype != STATE_DTYPE_NAME:
        raise st.err(node, f"the first argument of `{name}` must be an array of numba's xoroshiro128p "
                     "generator states (numba.cuda.random.create_xoroshiro128p_states)")
    if st.params[st.arrays[states.id]].ndim - len(st.views.get(states.id, ())) != 1:
        raise st.err(node, f"`{name}` takes a 1-d array of generator states, as numba.cuda.random's "
                     "functions index it with one integer")
    array, index = element(st, states.id, index_node, node, out)
    value = expression(st, seed[0], out) if seed else Lit(0)
    target = st.temp() if RESULTS[name] else None
    out.append(Draw(name, array, index, value, target, st.line))
    if target:
        st.types[target] = RESULTS[name]
    return target


def _arguments(st: LoweringState, name: str, node: ast.Call) -> list:
    """The call's argument nodes in the function's parameter order, as Python binds them."""
    params = PARAMETERS.get(name, ("states", "index"))
    spelled = f"{name}({', '.join(params)})"
    if len(node.args) > len(params):
        raise st.err(node, f"`{spelled}` takes {len(params)} arguments, got {len(node.args)}")
    bound = dict(zip(params, node.args))
    for kw in node.keywords:
        if kw.arg not in params or kw.arg in bound:
            raise st.err(node, f"`{spelled}`: unexpected or repeated argument "
                         f"{'**' + ast.unparse(kw.value) if kw.arg is None else kw.arg}")
        bound[kw.arg] = kw.value
    missing = [p for p in params if p not in bound]
    if missing:
        raise st.err(node, f"`{spelled}` is missing {', '.join(missing)}")
    return [bound[p] for p in params]
