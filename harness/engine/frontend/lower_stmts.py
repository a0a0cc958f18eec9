"""Lowering statements: assignments (names get SSA versions), augmented assignments, `if` with
phi moves at the join (lower_branches.py), expression statements; loops go to lower_loops.py. Each
handler is registered in the lowering's dispatch table (lower_dispatch.py)."""
from __future__ import annotations

import ast

from harness.engine.frontend import lower_local_functions as local_functions
from harness.engine.frontend.control import RET
from harness.engine.ir.ssa import Load, Prim, Special, Store
from harness.engine.frontend.lower_branches import if_stmt
from harness.engine.frontend.lower_calls import alloc, call
from harness.engine.frontend.lower_dispatch import block, expression, lowers, lowers_rest_of_block, lowers_tuple_values, unsupported_statement
from harness.engine.frontend.lower_exprs import BINOPS, ArrayResult, array_rank, is_view, name_atom, subscript, tuple_components, view
from harness.engine.frontend.lower_resolve import is_call_to, literal_int, resolve_call
from harness.engine.frontend.lower_state import LoweringState
from harness.engine.frontend.source import parse_kernel
from harness.engine.frontend.numba_limits import numba_refusal


def _array_valued(st: LoweringState, node) -> bool:
    if isinstance(node, ast.Name):
        return node.id in st.arrays and node.id not in st.env
    if isinstance(node, ast.Subscript):
        return is_view(st, node)
    return isinstance(node, ast.IfExp) and _array_valued(st, node.body) and _array_valued(st, node.orelse)


@lowers_rest_of_block
def array_binding_block(st: LoweringState, s, rest: list, out) -> bool:
    """A name bound to an array takes over the rest of its block (bind_array); so does an `if`
    whose branches only bind names to arrays (array_binding_branches)."""
    if array_binding_branches(st, s):
        cond = expression(st, s.test, out)
        before = dict(st.arrays), dict(st.views), dict(st.expired)

        def branch(stmts):
            def lower(o):           # each branch starts from the bindings before the `if`
                st.arrays, st.views, st.expired = (dict(d) for d in before)
                o.extend(block(st, stmts + rest))
            return lower
        orelse = s.orelse
        if not orelse and any(b.targets[0].id not in st.arrays for b in s.body):
            # `if c: source = sources[i]` (elif ...) with no else, the name unbound before: on the
            # path that binds nothing numba reads an undefined array (undefined behaviour, PyExaFMM's
            # blocked Gram kernel never takes it); that path keeps this branch's binding
            orelse = s.body
        if_stmt(st, cond, branch(s.body), branch(orelse), out)
        st.arrays, st.views, st.expired = before
        return True
    split = _split_array_tuple(st, s)
    if split is not None:
        out.extend(block(st, split + rest))
        return True
    if not array_binding(st, s):
        return False
    bind_array(st, s, rest, out)
    return True


def _split_array_tuple(st: LoweringState, s) -> list | None:
    """`(plane_point, plane_normal) = (plane[0], plane[1])` (MCViNE): a tuple of names bound to a
    tuple literal holding arrays or rows is one binding per name, in order. Python evaluates the
    whole right side first; that is the same here when no target is read on the right side."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], (ast.Tuple, ast.List))
            and isinstance(s.value, (ast.Tuple, ast.List)) and len(s.targets[0].elts) == len(s.value.elts)):
        return None
    targets, values = s.targets[0].elts, s.value.elts
    if not all(isinstance(t, ast.Name) and not t.id.startswith(RET) for t in targets) \
            or not any(_array_valued(st, v) for v in values):
        return None
    read = {n.id for v in values for n in ast.walk(v) if isinstance(n, ast.Name)}
    if read & {t.id for t in targets}:
        return None
    return [ast.copy_location(ast.Assign([ast.Name(t.id, ast.Store())], v), s) for t, v in zip(targets, values)]


def array_binding_branches(st: LoweringState, s) -> bool:
    """`if j % 2 == 0: out = even; inp = odd` / `else: out = odd; inp = even` (STUMPY's ping-pong
    of its distance arrays): the statement form of `out = even if c else odd`. The rest of the block
    is lowered once per branch, after that branch's bindings, as bind_array does for the expression."""
    if not (isinstance(s, ast.If) and bool(s.body) and all(array_binding(st, b) for b in s.body)):
        return False
    if len(s.orelse) == 1 and isinstance(s.orelse[0], ast.If):     # an `elif` chain
        return array_binding_branches(st, s.orelse[0])
    return all(array_binding(st, b) for b in s.orelse)


def array_binding(st: LoweringState, s) -> bool:
    """`data = buf_0`, `data = buf_0 if c else buf_1`, `row = sm[w, :]`: a name bound to an array."""
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
        and s.targets[0].id not in st.env and _array_valued(st, s.value)


def bind_array(st: LoweringState, s, rest: list, out) -> None:
    """Lower the rest of a block with a name bound to an array. A conditional choice lowers the
    rest once per choice (`if c: <rest, data is buf_0> else: <rest, data is buf_1>`), so every
    access names its array statically and the aliasing and ownership analyses see each one.
    After the block the name is unbound: a use after the `if` or loop that rebound it would need
    the run-time choice, and is refused (lower_exprs.subscript says why)."""
    name, value = s.targets[0].id, s.value
    saved, saved_views = dict(st.arrays), dict(st.views)
    if isinstance(value, (ast.Name, ast.Subscript)):
        if isinstance(value, ast.Subscript):          # a row: `sm_this = sm_partials[warpid, :]`
            st.arrays[name], st.views[name] = view(st, value, out)
        else:
            st.arrays[name] = st.arrays[value.id]
            st.views.pop(name, None)
            if value.id in st.views:
                st.views[name] = st.views[value.id]
        st.expired.pop(name, None)
        out.extend(block(st, rest))
    else:
        cond = expression(st, value.test, out)

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


@lowers(ast.Assign)
def assign_statement(st: LoweringState, s, out):
    if len(s.targets) != 1:
        raise st.err(s, "chained assignment `a = b = ...` is not supported; split it")
    assign(st, s.targets[0], s.value, out)


@lowers(ast.AnnAssign)
def annotated_assign(st: LoweringState, s, out):
    if s.value is None:
        raise unsupported_statement(st, s)
    assign(st, s.target, s.value, out)


@lowers(ast.AugAssign)
def augmented_assign(st: LoweringState, s, out):
    op = BINOPS.get(type(s.op))
    if op is None:
        raise st.err(s, f"augmented operator {type(s.op).__name__} is not supported")
    if isinstance(s.target, ast.Name):
        cur = name_atom(st, s.target)
        rhs = expression(st, s.value, out)
        new = st.fresh(s.target.id)
        st.emit_assign(out, new, Prim(op, (cur, rhs)))
        st.env[s.target.id] = new
    elif isinstance(s.target, ast.Subscript) and is_view(st, s.target):
        # array arithmetic in place: numba's CUDA target has no ufunc loops to compile it with (it
        # fails in lowering; only the simulator, which runs numpy, accepts it)
        raise st.err(s, f"`{ast.unparse(s).strip()}` is in-place arithmetic on an array view, which "
                        "numba.cuda itself cannot compile it in a kernel (no ufunc loops on the device); "
                        "write the loop over its elements")
    elif isinstance(s.target, ast.Subscript):
        array, index = subscript(st, s.target, out)
        old = st.emit_assign(out, st.temp(), Load(array, index))
        rhs = expression(st, s.value, out)
        new = st.emit_assign(out, st.temp(), Prim(op, (old, rhs)))
        out.append(Store(array, index, new, st.line))
    else:
        raise st.err(s, "unsupported augmented-assignment target")


@lowers(ast.If)
def if_statement(st: LoweringState, s, out):
    cond = expression(st, s.test, out)
    if_stmt(st, cond, lambda o: o.extend(block(st, s.body)),
            lambda o: o.extend(block(st, s.orelse)), out, node=s)


@lowers(ast.Expr)
def expression_statement(st: LoweringState, s, out):
    if isinstance(s.value, ast.Constant):          # docstring or bare literal
        return
    if isinstance(s.value, ast.Call):
        call(st, s.value, out, nvalues=-1)
        return
    raise st.err(s, numba_refusal(s) or
                 f"statement `{ast.unparse(s).strip()}` is not supported by the AD transform yet")


@lowers(ast.Pass)
def pass_statement(st: LoweringState, s, out):
    return


@lowers(ast.Break, ast.Continue)
def jump_outside_loop(st: LoweringState, s, out):
    # a loop's body has its jumps rewritten into flags before lowering (control.lower_jumps)
    raise st.err(s, f"`{type(s).__name__.lower()}` outside a loop body")


@lowers(ast.FunctionDef)
def function_definition(st: LoweringState, s, out):
    local_functions.define(st, s)          # recorded; each call inlines it (lower_local_functions.py)


def returns_tuple(st: LoweringState, value: ast.Call) -> bool:
    """Whether `value` calls a device function one of whose `return`s gives several values."""
    resolved = resolve_call(st, value)
    if not resolved or resolved[0] != "device":
        return False
    fn = resolved[1]
    src = fn.src if isinstance(fn, local_functions.LocalFunction) else parse_kernel(fn)
    # names the function binds to a tuple literal (`reflection = (vx - ..., ...)`; MCViNE returns it)
    tuple_bound = {t.id for n in ast.walk(src.tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Tuple)
                   and len(n.value.elts) > 1 for t in n.targets if isinstance(t, ast.Name)}

    def returns(stmts):
        for n in stmts:
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) and len(n.value.elts) > 1:
                return True
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id in tuple_bound:
                return True
            if not isinstance(n, (ast.FunctionDef, ast.Lambda)) and returns(ast.iter_child_nodes(n)):
                return True
        return False
    return returns(src.tree.body)


@lowers_tuple_values
def tuple_value(st: LoweringState, node, out):
    """The value of a tuple-valued expression as a (nested) list of atoms, evaluated left to right:
    a tuple literal, a name bound to a tuple, a device function's tuple result, cuda.grid(n) with
    n > 1. None for any other expression (nothing is evaluated then)."""
    if isinstance(node, ast.Name) and node.id in st.tuple_names and node.id not in st.env:
        return tuple_components(st, node.id)
    if isinstance(node, ast.Tuple) and len(node.elts) > 1 and not any(
            isinstance(e, (ast.Starred, ast.Slice)) for e in node.elts):
        if any(_array_valued(st, e) for e in node.elts):
            return None
        return [value if (value := tuple_value(st, e, out)) is not None else expression(st, e, out)
                for e in node.elts]
    if isinstance(node, ast.Call) and (is_call_to(st, node, "cuda", "grid") or is_call_to(st, node, "cuda", "gridsize")):
        n = literal_int(st, node.args[0])
        if n < 2:
            return None
        kind = "grid" if is_call_to(st, node, "cuda", "grid") else "gsize"
        return [st.emit_assign(out, st.temp(), Special(f"{kind}.{j}")) for j in range(n)]
    if isinstance(node, ast.Call) and returns_tuple(st, node):
        return call(st, node, out, as_list=True)
    return None


def bind_tuple(st: LoweringState, name: str, structure: list, out) -> None:
    """Bind `name` to a tuple held as its components (nested tuples as nested component names)."""
    st.env.pop(name, None)
    st.tuple_names.pop(name, None)
    for k, item in enumerate(structure):
        c = f"{name}__{k}"
        if isinstance(item, list):
            bind_tuple(st, c, item, out)
        elif isinstance(item, ArrayResult):         # `return f(...)` of a helper returning (array, ...)
            st.tuple_names.pop(c, None)
            st.env.pop(c, None)
            st.returned_arrays[c] = item
        else:
            st.tuple_names.pop(c, None)
            st.env[c] = st.emit_assign(out, st.fresh(c), Prim("copy", (item,)))
    st.tuple_names[name] = len(structure)


def assign(st: LoweringState, target, value, out):
    if isinstance(target, ast.Name) and isinstance(value, ast.Call) \
            and (resolve_call(st, value) or (None, None))[1] in ("cuda.shared.array", "cuda.local.array"):
        return alloc(st, target.id, value, out)
    if isinstance(target, ast.Name):
        if target.id in st.arrays:
            raise st.err(target, f"cannot rebind array '{target.id}'")
        structure = tuple_value(st, value, out)
        if structure is not None:
            # `p = f(...)` with f returning a tuple, `ext = (lo, hi)`, `q = p`, nested ones: numba
            # keeps the tuple as a value; here it is its components, `p__0, p__1, ...` (a nested
            # tuple's own components `p__1__0, ...`), read as `p[k]`, unpacked, looped over or
            # passed whole to a device function
            if len(structure) == 1 and isinstance(value, ast.Call) and not isinstance(structure[0], list):
                st.tuple_names.pop(target.id, None)
                st.env[target.id] = st.emit_assign(out, st.fresh(target.id), Prim("copy", (structure[0],)))
                return
            if not structure and isinstance(value, ast.Call):
                raise st.err(value, f"`{ast.unparse(value.func)}` returns no value")
            bind_tuple(st, target.id, structure, out)
            return
        new = st.fresh(target.id)
        expression(st, value, out, target=new)
        st.tuple_names.pop(target.id, None)
        st.env[target.id] = new
    elif isinstance(target, ast.Subscript) and is_view(st, target):
        out.extend(block(st, store_into_view(st, target, value, None)))
    elif isinstance(target, ast.Subscript):
        array, index = subscript(st, target, out)
        v = expression(st, value, out)
        out.append(Store(array, index, v, st.line))
    elif isinstance(target, (ast.Tuple, ast.List)):
        # Python's order: the whole right side first, then each target from left to right
        pairs = []
        unpack_values(st, target, value, out, pairs)
        for t, a in pairs:
            assign_atom(st, t, a, out)
    else:
        raise st.err(target, "unsupported assignment target")


def store_into_view(st: LoweringState, target, value, op) -> list[ast.stmt]:
    """`a[i, :] = v`, `a[lo:hi] = b`, `row[:] += v`: numba's element-wise store into a view, as
    loops over the view's dimensions. The value is evaluated once, first, as Python does: a
    number is stored into every element; an array or a view of the same rank is copied element by
    element (numba broadcasts an array of fewer dimensions; that is refused here)."""
    n = st.njumps = st.njumps + 1
    dst, src = f"slice{n}_dst__", f"slice{n}_src__"
    name = lambda v, ctx=ast.Load: ast.Name(v, ctx())                 # noqa: E731
    rank = array_rank(st, target)
    copies = (isinstance(value, ast.Name) and value.id in st.arrays and value.id not in st.env) or is_view(st, value)
    if copies and array_rank(st, value) != rank:
        fewer = array_rank(st, value) < rank
        raise st.err(target, f"`{ast.unparse(target)} = {ast.unparse(value)}`: storing an array of "
                     f"{array_rank(st, value)} dimension(s) into a view of {rank}: "
                     + ("numba broadcasts it; that is not supported here yet" if fewer else
                        "numba refuses it too (the shapes cannot match)"))
    counters = [f"slice{n}_k{d}__" for d in range(rank)]
    index = ast.Tuple([name(k) for k in counters], ast.Load()) if rank > 1 else name(counters[0])
    element = ast.Subscript(name(src), index, ast.Load()) if copies else name(src)
    if op is not None:
        element = ast.BinOp(ast.Subscript(name(dst), index, ast.Load()), op, element)
    body: list[ast.stmt] = [ast.Assign([ast.Subscript(name(dst), index, ast.Store())], element)]
    for d in reversed(range(rank)):
        length = ast.Subscript(ast.Attribute(name(dst), "shape", ast.Load()), ast.Constant(d), ast.Load())
        body = [ast.For(name(counters[d], ast.Store), ast.Call(name("range"), [length], []), body, [])]
    stmts = [ast.Assign([name(src, ast.Store)], value), ast.Assign([name(dst, ast.Store)], target)] + body
    for node in stmts:
        ast.copy_location(node, target)
        ast.fix_missing_locations(node)
    return stmts


def unpack_values(st: LoweringState, target, value, out, pairs: list) -> None:
    """Evaluate `value` for the tuple `target`, appending (leaf target, atom) pairs in order:
    literal tuples (nested ones too), cuda.grid(n)/gridsize(n), and calls returning values."""
    n = len(target.elts)
    if any(isinstance(t, ast.Starred) for t in target.elts):
        raise st.err(target, numba_refusal(target))
    if is_call_to(st, value, "cuda", "grid") or is_call_to(st, value, "cuda", "gridsize"):
        kind = "grid" if is_call_to(st, value, "cuda", "grid") else "gsize"
        k = literal_int(st, value.args[0])
        if k != n:
            raise st.err(target, f"cuda.{value.func.attr}({k}) unpacked into {n} names")
        atoms = [st.emit_assign(out, st.temp(), Special(f"{kind}.{j}")) for j in range(k)]
    elif _array_valued(st, value) and not isinstance(value, ast.IfExp):
        # `(px, py, pz) = p` with p a 1-d array or row (MCViNE's vectors): its first n elements,
        # as numba unpacks an array (numba checks the length at run time; here it is assumed)
        if array_rank(st, value) != 1:
            raise st.err(target, f"`{ast.unparse(value)}` has {array_rank(st, value)} dimensions: unpacking "
                                 "it into rows is not supported; unpack a 1-d array or a row")
        atoms = [expression(st, ast.copy_location(ast.Subscript(value, ast.Constant(j), ast.Load()), value), out)
                 for j in range(n)]
    elif (structure := tuple_value(st, value, out)) is not None:
        if len(structure) != n:
            raise st.err(target, f"{len(structure)} values unpacked into {n} targets")
        _match_structure(st, target, structure, pairs)
        return
    elif isinstance(value, (ast.Tuple, ast.List)):
        if len(value.elts) != n:
            raise st.err(target, f"{len(value.elts)} values unpacked into {n} targets")
        for t, v in zip(target.elts, value.elts):
            if isinstance(t, (ast.Tuple, ast.List)):
                unpack_values(st, t, v, out, pairs)
            elif _array_valued(st, v) and isinstance(t, ast.Name) and t.id.startswith(RET) \
                    and not isinstance(v, ast.IfExp):
                # `return point, (x, y, z)`: the array is returned by reference; every return of the
                # helper must name the same array there (MCViNE returns its argument on both paths)
                if isinstance(v, ast.Name):
                    ref = ArrayResult(st.arrays[v.id], tuple(st.views.get(v.id, ())))
                else:
                    ref = ArrayResult(*view(st, v, out))
                if st.returned_arrays.get(t.id, ref) != ref:
                    raise st.err(v, f"the helper returns different arrays at position {t.id[len(RET):]} on "
                                    "different paths: which one is decided at run time; return the same array")
                st.returned_arrays[t.id] = ref
            elif _array_valued(st, v):
                raise st.err(v, f"the array `{ast.unparse(v)}` is unpacked with other values into names some of "
                                "which are read on the right side: bind it on its own")
            elif (structure := tuple_value(st, v, out)) is not None:
                pairs.append((t, structure))            # a nested tuple beside an array
            else:
                pairs.append((t, expression(st, v, out)))
        return
    elif isinstance(value, ast.Call):
        atoms = call(st, value, out, nvalues=n, as_list=True)
        if len(atoms) != n:
            raise st.err(target, f"call returns {len(atoms)} values, unpacked into {n}")
    else:
        raise st.err(target, "tuple assignment needs a tuple of the same length, a call returning "
                     "that many values, an array's shape or cuda.grid(n)")
    for t, a in zip(target.elts, atoms):
        if isinstance(t, (ast.Tuple, ast.List)):
            raise st.err(t, "a nested target needs a nested tuple of values")
        pairs.append((t, a))


def _match_structure(st: LoweringState, target, structure: list, pairs: list) -> None:
    """(leaf target, atom or nested list) pairs of a tuple target matched against a tuple value."""
    for t, item in zip(target.elts, structure):
        if isinstance(t, ast.Starred):
            raise st.err(t, numba_refusal(t) or "starred unpacking is not supported")
        if isinstance(t, (ast.Tuple, ast.List)):
            if not isinstance(item, list) or len(item) != len(t.elts):
                raise st.err(t, "a nested target needs a nested tuple of as many values")
            _match_structure(st, t, item, pairs)
        else:
            pairs.append((t, item))


def assign_atom(st: LoweringState, t, a, out) -> None:
    """Assign an already computed atom (or a tuple of them, to a name) to a name or an array element."""
    if isinstance(a, ArrayResult):
        # an array a helper returned (inside its tuple): the name is another name for that array
        if not isinstance(t, ast.Name):
            raise st.err(t, "an array a device function returns inside a tuple is bound to a name; "
                            f"`{ast.unparse(t)}` is not one")
        if t.id in st.env or t.id in st.tuple_names:
            raise st.err(t, f"'{t.id}' holds a number or a tuple and would be rebound to an array")
        if t.id in st.arrays and (st.arrays[t.id], tuple(st.views.get(t.id, ()))) != (a.array, a.entries):
            # a second binding to another array (in another branch, say) would be read everywhere
            raise st.err(t, f"'{t.id}' is bound to another array before: which one it names would be "
                            "decided at run time; use a new name")
        st.arrays[t.id] = a.array
        st.views.pop(t.id, None)
        if a.entries:
            st.views[t.id] = a.entries
        st.expired.pop(t.id, None)
        return
    if isinstance(a, list):
        if not isinstance(t, ast.Name):
            raise st.err(t, f"a tuple of {len(a)} values is stored into `{ast.unparse(t)}`, which takes one")
        if t.id in st.arrays:
            raise st.err(t, f"cannot rebind array '{t.id}' to a tuple")
        bind_tuple(st, t.id, a, out)
        return
    if isinstance(t, ast.Name):
        if t.id in st.arrays:
            raise st.err(t, f"cannot rebind array '{t.id}' to a value")
        new = st.fresh(t.id)
        st.emit_assign(out, new, Prim("copy", (a,)))
        st.tuple_names.pop(t.id, None)
        st.env[t.id] = new
    elif isinstance(t, ast.Subscript):
        array, index = subscript(st, t, out)
        out.append(Store(array, index, a, st.line))
    else:
        raise st.err(t, "only names and array elements may be unpacked into")
