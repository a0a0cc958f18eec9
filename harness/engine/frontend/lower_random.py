"""Lowering of calls to numba's random number generator (numba.cuda.random, rules/rng.py): each
becomes one `Draw` statement on the state array, with the call's own arguments."""
from __future__ import annotations

import ast

from harness.engine.frontend.lower_dispatch import expression
from harness.engine.frontend.lower_exprs import element
from harness.engine.frontend.lower_state import LoweringState
from harness.engine.ir.ssa import Draw, Lit
from harness.engine.rules.rng import DRAWS, STATE_DTYPE_NAME

# what each function returns (None: nothing) and how many arguments it takes after the states
# and the index: init_xoroshiro128p_state(states, index, seed)
RESULTS = {**DRAWS, "xoroshiro128p_next": "uint64", "xoroshiro128p_jump": None,
           "init_xoroshiro128p_state": None}
EXTRA_ARGS = {"init_xoroshiro128p_state": 1}


def random_call(st: LoweringState, name: str, node: ast.Call, out):
    """`name(states, index[, seed])`: the Draw, and its result's SSA name (None if it returns nothing)."""
    wanted = 2 + EXTRA_ARGS.get(name, 0)
    if len(node.args) != wanted:
        raise st.err(node, f"`{name}` takes {wanted} arguments (states, index"
                     f"{', seed' if wanted == 3 else ''}), got {len(node.args)}")
    states, index_node = node.args[:2]
    if not (isinstance(states, ast.Name) and states.id in st.arrays) \
            or st.params[st.arrays[states.id]].dtype != STATE_DTYPE_NAME:
        raise st.err(node, f"the first argument of `{name}` must be an array of numba's xoroshiro128p "
                     "generator states (numba.cuda.random.create_xoroshiro128p_states)")
    array, index = element(st, states.id, index_node, node, out)
    value = expression(st, node.args[2], out) if wanted == 3 else Lit(0)
    target = st.temp() if RESULTS[name] else None
    out.append(Draw(name, array, index, value, target, st.line))
    if target:
        st.types[target] = RESULTS[name]
    return target
