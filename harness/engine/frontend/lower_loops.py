"""Lowering of loops: small static ranges and literal tuples are unrolled; other `for` and `while`
loops become `Loop` nodes whose reassigned scalars are loop-carried registers. Functions over the
lowering's state; a body lowered again starts from the state's snapshot (lower_state.py).
"""
from __future__ import annotations

import ast

from harness.engine.frontend import loop_else
from harness.engine.frontend import lower_local_functions as local_functions
from harness.engine.frontend.control import BREAK, SKIP, assigned_names, has_jump, uses_name, lower_jumps
from harness.engine.ir.ssa import Lit, Loop, Prim
from harness.engine.frontend.lower_dispatch import block, expression, lowers
from harness.engine.frontend.lower_exprs import is_view
from harness.engine.frontend.lower_resolve import literal_int
from harness.engine.frontend.lower_state import LoweringState
from harness.engine.frontend.read_after import read_after
from harness.engine.ir.types import promote_pair

UNROLL_LIMIT = 16            # static range loops up to this trip count are unrolled


@lowers(ast.For)
def for_loop(st: LoweringState, s: ast.For, out):
    if s.orelse:
        return loop_with_else(st, s, out)
    it = s.iter
    if isinstance(it, (ast.Tuple, ast.List)) and isinstance(s.target, ast.Name) and not has_jump(s.body):
        for elt in it.elts:              # `for d in (16, 8, 4)`: unrolled over the literal values
            st.env[s.target.id] = expression(st, elt, out, target=st.fresh(s.target.id))
            out.extend(block(st, s.body))
        return
    if isinstance(it, ast.Name) and it.id in st.tuple_names and it.id not in st.env \
            and isinstance(s.target, ast.Name) and not has_jump(s.body):
        # `for p_n in p` over a tuple (MCViNE's size_of_vector): unrolled over its components
        for k in range(st.tuple_names[it.id]):
            component = f"{it.id}__{k}"
            if component in st.tuple_names:
                raise st.err(s, f"`{it.id}` holds a nested tuple: looping over it is not supported")
            st.env[s.target.id] = st.emit_assign(out, st.fresh(s.target.id), Prim("copy", (st.env[component],)))
            out.extend(block(st, s.body))
        return
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and not it.keywords and 1 <= len(it.args) <= 3):
        counted = array_iteration(st, s)
        if counted is None:
            raise st.err(s, "only loops over range(...), literal tuples, arrays, and enumerate(...) or "
                         "zip(...) of arrays are supported")
        out.extend(block(st, counted))
        return
    if not isinstance(s.target, ast.Name):
        raise st.err(s.target, "the loop variable must be a single name")
    args = list(it.args)
    step_node = args[2] if len(args) == 3 else ast.Constant(1)
    start_node = args[0] if len(args) >= 2 else ast.Constant(0)
    stop_node = args[1] if len(args) >= 2 else args[0]
    if not _is_int_literal(step_node):
        out.extend(block(st, runtime_step_range(st, s, start_node, stop_node, step_node)))
        return
    step = literal_int(st, step_node) if not (isinstance(step_node, ast.UnaryOp)
                                              and isinstance(step_node.operand, ast.Constant)) \
        else -literal_int(st, step_node.operand)
    if step == 0:
        raise st.err(step_node, "range() step must not be zero")
    start, stop = expression(st, start_node, out), expression(st, stop_node, out)
    if isinstance(start, Lit) and isinstance(stop, Lit) and not has_jump(s.body):
        count = len(range(start.value, stop.value, step))
        if count <= UNROLL_LIMIT:          # small static loops: unrolled, pure SSA, no tape
            for value in range(start.value, stop.value, step):
                st.env[s.target.id] = st.emit_assign(out, st.fresh(s.target.id), Prim("copy", (Lit(value),)))
                out.extend(block(st, s.body))
            return
    brk, skip = jump_flags(st)
    body = lower_jumps(s.body, st.src, brk, skip)
    loop(st, s, out, "for", body, start=start, stop=stop, step=step, var=s.target.id, brk=brk)


def array_iteration(st: LoweringState, s: ast.For) -> list[ast.stmt] | None:
    """`for v in a`, `for i, v in enumerate(a[, start])`, `for u, v in zip(a, b)` over arrays,
    views and (inside enumerate/zip) ranges as the counted loop numba runs: each array is bound once (a view's indices are evaluated
    before the loop, as numba evaluates the iterable once), the loop counts along its first
    dimension (zip: the shortest), and each iteration binds the target to the element, or to the
    row of an array of several dimensions. None when `s` iterates over anything else."""
    n = st.njumps = st.njumps + 1
    k = f"iter{n}_k__"
    bindings: list[ast.stmt] = []
    lengths: list[ast.expr] = []

    def sequence(node) -> ast.expr | None:
        """The iterable's value at the counter k, binding an array once; None if not an array."""
        if _is_range(st, node) and len(node.args) == 3 and not _is_int_literal(node.args[2]):
            return None
        if _is_range(st, node):
            # `zip(range(a, b), range(c, d))`: each range's bounds evaluated once, before the loop,
            # in order; its length is len(range(...)), its element at k is start + k * step
            args = list(node.args)
            step = ast.Constant(1) if len(args) < 3 else args[2]
            bounds = [ast.Constant(0), args[0]] if len(args) == 1 else args[:2]
            names = []
            for b in bounds:
                names.append(f"iter{n}_b{len(bindings)}__")
                bindings.append(ast.Assign([ast.Name(names[-1], ast.Store())], b))
            lo, hi = (ast.Name(x, ast.Load()) for x in names)
            v = literal_int(st, step) if isinstance(step, ast.Constant) else -literal_int(st, step.operand)
            if v == 0:
                raise st.err(node, "range() step must not be zero")
            span = ast.BinOp(hi, ast.Sub(), lo) if v > 0 else ast.BinOp(lo, ast.Sub(), hi)
            count = ast.BinOp(ast.BinOp(span, ast.Add(), ast.Constant(abs(v) - 1)), ast.FloorDiv(),
                              ast.Constant(abs(v)))
            lengths.append(ast.Call(ast.Name("max", ast.Load()), [ast.Constant(0), count], []))
            return ast.BinOp(ast.Name(names[0], ast.Load()), ast.Add(),
                             ast.BinOp(ast.Name(k, ast.Load()), ast.Mult(), ast.Constant(v)))
        if isinstance(node, ast.Name) and node.id in st.arrays and node.id not in st.env:
            seq = node.id
        elif is_view(st, node):
            seq = f"iter{n}_seq{len(bindings)}__"
            bindings.append(ast.Assign([ast.Name(seq, ast.Store())], node))
        else:
            return None
        lengths.append(ast.Subscript(ast.Attribute(ast.Name(seq, ast.Load()), "shape", ast.Load()),
                                     ast.Constant(0), ast.Load()))
        return ast.Subscript(ast.Name(seq, ast.Load()), ast.Name(k, ast.Load()), ast.Load())

    def element(node) -> ast.expr | None:
        """What the target takes at counter k: an array's element, or a tuple of them."""
        call = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and not node.keywords and node.func.id not in st.env else None
        if call == "enumerate" and 1 <= len(node.args) <= 2:
            inner = element(node.args[0])
            counter = ast.Name(k, ast.Load()) if len(node.args) == 1 else \
                ast.BinOp(ast.Name(k, ast.Load()), ast.Add(), node.args[1])
            return None if inner is None else ast.Tuple([counter, inner], ast.Load())
        if call == "zip" and node.args:
            items = [element(a) for a in node.args]
            return None if any(x is None for x in items) else ast.Tuple(items, ast.Load())
        return sequence(node)

    value = element(s.iter)
    if value is None or (_is_range(st, s.iter) and isinstance(s.iter, ast.Call)):
        return None                      # a plain range loop is for_loop's own
    stop = lengths[0] if len(lengths) == 1 else ast.Call(ast.Name("min", ast.Load()), lengths, [])
    body = [ast.Assign([s.target], value)] if isinstance(s.target, ast.Name) \
        else [ast.Assign([t], v) for t, v in _pairs(st, s.target, value)]
    loop_ = ast.For(ast.Name(k, ast.Store()), ast.Call(ast.Name("range", ast.Load()), [stop], []),
                    body + list(s.body), list(s.orelse))
    for node in bindings + [loop_]:
        ast.copy_location(node, s)
        ast.fix_missing_locations(node)
    return bindings + [loop_]


def _pairs(st: LoweringState, target, value) -> list:
    """(name target, value) pairs of a tuple target unpacked from enumerate/zip's tuple value."""
    if isinstance(target, ast.Name):
        return [(target, value)]
    if not isinstance(target, (ast.Tuple, ast.List)) or not isinstance(value, ast.Tuple) \
            or len(target.elts) != len(value.elts):
        raise st.err(target, f"`{ast.unparse(target)}` does not match the {len(getattr(value, 'elts', ()))} "
                     "values each iteration gives")
    return [p for t, v in zip(target.elts, value.elts) for p in _pairs(st, t, v)]


def _is_range(st: LoweringState, node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" \
        and node.func.id not in st.env and not node.keywords and 1 <= len(node.args) <= 3


def _is_int_literal(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)


def runtime_step_range(st: LoweringState, s: ast.For, start, stop, step) -> list[ast.stmt]:
    """`for v in range(a, b, s)` with a step known only at run time (a grid-stride loop's
    `cuda.gridsize(1)`) as the `while` loop with Python's meaning: a, b and s evaluated once; the
    counter advances before the body, so `continue` cannot skip it and `v` keeps the last value;
    a zero or wrongly signed step runs no iteration (where Python raises for a zero step)."""
    n = st.njumps = st.njumps + 1
    k, e, d = (f"range{n}_{part}__" for part in ("next", "stop", "step"))
    name = lambda v, ctx=ast.Load: ast.Name(v, ctx())             # noqa: E731
    compare = lambda op, a, b: ast.Compare(name(a), [op], [name(b)])  # noqa: E731
    zero = ast.Constant(0)
    header = [ast.Assign([name(d, ast.Store)], step), ast.Assign([name(k, ast.Store)], start),
              ast.Assign([name(e, ast.Store)], stop)]
    test = ast.IfExp(ast.Compare(name(d), [ast.Gt()], [zero]), compare(ast.Lt(), k, e),
                     ast.IfExp(ast.Compare(name(d), [ast.Lt()], [zero]), compare(ast.Gt(), k, e),
                               ast.Constant(False)))
    body = [ast.Assign([name(s.target.id, ast.Store)], name(k)),
            ast.Assign([name(k, ast.Store)], ast.BinOp(name(k), ast.Add(), name(d)))] + list(s.body)
    loop_ = ast.While(test, body, [])
    for node in header + [loop_]:
        ast.copy_location(node, s)
        ast.fix_missing_locations(node)
    return header + [loop_]


@lowers(ast.While)
def while_loop(st: LoweringState, s: ast.While, out):
    if s.orelse:
        return loop_with_else(st, s, out)
    brk, skip = jump_flags(st)
    body = lower_jumps(s.body, st.src, brk, skip)
    loop(st, s, out, "while", body, test=s.test, brk=brk)


def loop_with_else(st: LoweringState, s, out):
    """`for/while ... else` (loop_else.py): the loop, a flag its breaks set, the else block under `if not flag`."""
    def flag_name() -> str:
        st.njumps += 1
        return f"{BREAK}else{st.njumps}"
    out.extend(block(st, loop_else.without_else(s, flag_name)))


def jump_flags(st: LoweringState) -> tuple[str, str]:
    st.njumps += 1
    return f"{BREAK}{st.njumps}", f"{SKIP}{st.njumps}"


def loop(st: LoweringState, s, out, kind, body, *, start=None, stop=None, step=1, var=None, test=None, brk=BREAK):
    """Lower a dynamic loop. Registers for every scalar the body reassigns are created before
    the loop; their types may widen in the body (s = 0; s += x[k]), in which case the body is
    lowered again with the wider type so no float is mistaken for an integer."""
    assigned = assigned_names(body) | ({brk} if uses_name(body, brk) else set())
    if var and var in st.env:
        # a counter that rebinds a name defined before the loop: Python leaves it holding the last
        # iteration's value, or the old value when the loop runs no iteration; carried like any name
        assigned.add(var)
    # a name first bound in the body and read after the loop holds the last iteration's value
    # there (Python's scoping, which numba keeps): it is carried too, from a typed zero before the
    # loop (what it holds if no iteration binds it, where Python would raise and numba reads an
    # undefined value), its type the one the body gives it
    first_bound = sorted(v for v in assigned - set(st.env) - {brk, var}
                         if v not in st.arrays and not v.startswith(("!", SKIP))
                         and (read_after(st.src.tree, s, v) or _read_apart_from_binding(body, v)))
    carried_vars = sorted(set(v for v in assigned if v in st.env or v == brk) | set(first_bound))
    if brk in carried_vars and brk not in st.env:
        st.env[brk] = st.emit_assign(out, st.fresh(brk), Prim("copy", (Lit(False),)))
    line = st.line
    functions = st.local_functions
    widened: dict[str, str] = {}
    for _attempt in range(5):
        snapshot = st.snapshot()
        pre: list = []
        registers = {}
        for v in first_bound:
            st.env[v] = st.emit_assign(pre, st.fresh(v), Prim(f"cast_{widened.get(v, 'int64')}", (Lit(0),)))
        for v in carried_vars:
            reg = st.fresh(v)
            st.emit_assign(pre, reg, Prim("copy", (st.env[v],)))
            if v in widened:
                st.types[reg] = widened[v]
            registers[v] = reg
            st.env[v] = reg
        loop_var = st.fresh(var) if var else None
        if loop_var:
            st.types[loop_var] = "int64"
            st.env[var] = loop_var
        header, cond = [], None
        if test is not None:
            cond = expression(st, ast.copy_location(ast.BoolOp(ast.And(), [
                ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load())), test]), test)
                if brk in carried_vars else test, header)
        st.depth_ctl += 1
        lowered = block(st, body)
        st.depth_ctl -= 1
        lost = [v for v in carried_vars if v not in st.env]
        if lost:
            # bound in the body to a device function's tuple: its components are what is carried
            if any(v not in st.tuple_names for v in lost):
                raise st.err(s, f"'{lost[0]}' is bound in this loop to a value the loop cannot carry")
            sizes = {v: st.tuple_names[v] for v in lost}
            st.restore(snapshot)
            for v, n in sizes.items():
                first_bound = [x for x in first_bound if x != v]
                carried_vars = [x for x in carried_vars if x != v]
                for c in (f"{v}__{k}" for k in range(n)):
                    if c not in st.env:
                        first_bound.append(c)
                    carried_vars.append(c)
            first_bound, carried_vars = sorted(set(first_bound)), sorted(set(carried_vars))
            continue
        carried = [(registers[v], st.env[v]) for v in carried_vars if st.env[v] != registers[v]]
        changed = {v: st.types[registers[v]] for v in carried_vars
                   if promote_pair(st.types[registers[v]], st.atom_type(st.env[v])) != st.types[registers[v]]}
        # the zero before the loop has no type of its own: the register takes the body's type
        retyped = {v: st.atom_type(st.env[v]) for v in first_bound
                   if st.atom_type(st.env[v]) != st.types[registers[v]]}
        if not changed and not retyped:
            break
        for v in changed:
            widened[v] = promote_pair(st.types[registers[v]], st.atom_type(st.env[v]))
        widened.update(retyped)
        st.restore(snapshot)
    else:
        raise st.err(s, "loop-carried types did not settle")
    # an inner function defined in the body exists after the loop only if an iteration ran
    st.local_functions = local_functions.after_branches(functions, st.local_functions, {})
    st.nloops += 1
    out.extend(pre)
    out.append(Loop(kind, lowered, carried, line, st.nloops, var=loop_var, start=start, stop=stop,
                    step=step, header=header, cond=cond))
    for v in carried_vars:
        st.env[v] = registers[v]       # after the loop a register holds the final value
    if var and var not in carried_vars:
        st.env.pop(var, None)          # defined after the loop only if it ran: left undefined
    st.line = line


def _read_apart_from_binding(body: list, name: str) -> bool:
    """Whether a statement of the loop body that does not bind `name` reads it (`if c: last = x[k]`,
    then `out[i] += last`): on an iteration whose `if` binds nothing, Python reads the value an
    earlier iteration left, so the name is carried through the loop like any reassigned scalar
    (a statement that binds it and reads it, `if c: t = f(x); y += t`, needs no carrying)."""
    binding = [b for b in body if name in assigned_names([b])]
    if not binding or not all(isinstance(b, ast.If) for b in binding):
        return False                  # bound at the body's top level, or by a nested loop (which carries it)
    if any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name
           for b in body for n in ast.walk(b)):
        return False                              # an array (or tuple) name: bound per branch instead
    return any(name not in assigned_names([b]) and uses_name([b], name) for b in body)
