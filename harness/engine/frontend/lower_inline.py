"""Lowering of calls to device functions: inlined in place (each recorded as a child compile job),
custom rules replacing a body's derivative, and device-side `autodiff` as a `Nested` statement.
Functions over the lowering's state (lower_state.py).
"""
from __future__ import annotations

import ast
import copy

from harness.engine.frontend import lower_local_functions as local_functions
from harness.engine.frontend.control import RET, prepare_body
from harness.engine.frontend.source import constant, parse_kernel, python_function, resolve_global
from harness.engine.ir.ssa import Assign, Lit, Nested, NestedArg, Prim, walk
from harness.engine.frontend.lower_dispatch import block, expression
from harness.engine.frontend.lower_exprs import tuple_components, view
from harness.engine.frontend.lower_local_functions import LocalFunction
from harness.engine.frontend.lower_resolve import resolve_call
from harness.engine.frontend.lower_state import LoweringState


def device_call(st: LoweringState, fn, node, out) -> list:
    from harness.engine.rules.custom import rule_for
    rule = rule_for(fn)
    if rule is None:
        return inline(st, fn, node.args, out, node)
    operands = [expression(st, a, out) for a in node.args]
    st.nodiff_depth += 1
    value = inline(st, fn, operands, out, node)
    if len(value) != 1:
        raise st.err(node, f"a custom rule needs {fn.__name__} to return one value")
    partials = inline(st, rule.partials, operands + value, out, node)
    st.nodiff_depth -= 1
    if len(partials) != len(operands):
        raise st.err(node, f"the rule for {fn.__name__} returns {len(partials)} partial(s) "
                     f"for {len(operands)} operand(s)")
    t = st.temp()
    out.append(Assign(t, Prim("custom", tuple(value) + tuple(operands), tuple(partials)), st.line))
    st.types[t] = st.atom_type(value[0])
    return [t]


def index_tuple_parameters(st: LoweringState, src, stmts: list, tuples: dict[str, int]) -> list:
    """A helper's parameter given a tuple (`cuda_atomic_nanmax(ary, (i, j), v)`) is read through its
    components, bound as `p__0, p__1, ...`: as a whole index (`ary[p]`, an atomic's index) it is
    the tuple of them, `p[k]` with k a literal is `p__k`. numba passes the tuple as a value; any
    other use of it is refused, naming the line."""
    class Components(ast.NodeTransformer):
        def whole(self, node):
            return ast.copy_location(ast.Tuple([ast.copy_location(ast.Name(f"{node.id}__{k}", ast.Load()), node)
                                                for k in range(tuples[node.id])], ast.Load()), node)

        def visit_Subscript(self, node):
            v, k = node.value, node.slice
            position = constant(src, k) if isinstance(v, ast.Name) and v.id in tuples else None
            if isinstance(position, int) and -tuples[v.id] <= position < tuples[v.id]:
                return ast.copy_location(ast.Name(f"{v.id}__{position % tuples[v.id]}", ast.Load()), node)
            if isinstance(k, ast.Name) and k.id in tuples:
                node.value = self.visit(node.value)
                node.slice = self.whole(k)
                return node
            return self.generic_visit(node)

        def visit_Call(self, node):
            d = node.func
            if isinstance(d, ast.Attribute) and isinstance(d.value, ast.Attribute) and d.value.attr == "atomic" \
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Name) and node.args[1].id in tuples:
                node.args[1] = self.whole(node.args[1])
            return self.generic_visit(node)

        def visit_Name(self, node):
            return node            # any other use reads the tuple through its components (lower_stmts.tuple_value)
    return [Components().visit(copy.deepcopy(s)) for s in stmts]


def names_tested_before_returns(fn: ast.FunctionDef) -> set[str]:
    """The names an `if` or conditional expression tests when one of its sides returns."""
    names = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.If) and any(isinstance(r, ast.Return) for b in (n.body, n.orelse)
                                         for s in b for r in ast.walk(s)):
            names |= {m.id for m in ast.walk(n.test) if isinstance(m, ast.Name)}
    return names


def with_module_defaults(fn, args: list) -> list:
    """A module-level device function's call completed from its trailing defaults, when they are
    numbers (numba compiles an omitted argument as its default's constant)."""
    defaults = python_function(fn).__defaults__ or ()
    missing = len(python_function(fn).__code__.co_varnames[:python_function(fn).__code__.co_argcount]) - len(args)
    if 0 < missing <= len(defaults) and all(isinstance(v, (bool, int, float)) for v in defaults[-missing:]):
        return list(args) + [ast.Constant(v) for v in defaults[len(defaults) - missing:]]
    return list(args)


def inline(st: LoweringState, fn, args, out, node) -> list:
    """Lower `fn`'s body in place with its parameters bound to `args` (AST nodes or atoms); an inner
    function (lower_local_functions.py) also sees its free names bound as in the body defining it."""
    local = isinstance(fn, LocalFunction)
    src = fn.src if local else parse_kernel(fn)
    if local:
        args = local_functions.with_defaults(fn, args)
    else:
        args = with_module_defaults(fn, args)
    if src.name in st.call_stack:
        raise st.err(node, f"recursive call to {src.name} cannot be differentiated")
    if len(args) != len(src.params):
        raise st.err(node, f"{src.name} takes {len(src.params)} arguments, {len(args)} given")
    arrays, views, scalars, tuples = {}, {}, [], {}
    for pname, a in zip(src.params, args):
        row = view(st, a, out) if isinstance(a, ast.Subscript) else None
        if isinstance(a, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in a.elts):
            # an index tuple (`f(ary, (i, j))`): one scalar per component (index_tuple_parameters)
            tuples[pname] = len(a.elts)
            scalars.extend((f"{pname}__{k}", expression(st, e, out)) for k, e in enumerate(a.elts))
        elif isinstance(a, ast.Name) and a.id in st.tuple_names:     # a tuple a device function returned
            tuples[pname] = st.tuple_names[a.id]
            scalars.extend((f"{pname}__{k}", st.env[f"{a.id}__{k}"]) for k in range(tuples[pname]))
        elif isinstance(a, ast.Name) and a.id in st.arrays:
            arrays[pname] = st.arrays[a.id]
            if a.id in st.views:
                views[pname] = st.views[a.id]
        elif row is not None:                # a row of an array (`sm[w, :]`): indexed through it
            arrays[pname], views[pname] = row
        else:
            scalars.append((pname, a if not isinstance(a, ast.AST) else expression(st, a, out)))
    free, free_arrays, free_views = local_functions.closure(st, fn, node) if local else ({}, {}, {})
    saved = (st.src, st.env, st.arrays, st.views, st.prefix, st.line, st.scope, st.local_functions,
             st.outer_scopes, st.tuple_names, st.returned_arrays)
    st.calls.append((src.name, st.call_stack[-1], st.line))
    st.call_stack.append(src.name)
    st.prefix = f"{st.prefix}{src.name}_"
    st.outer_scopes = {**st.outer_scopes, st.scope: (st.env, st.arrays, st.views)}
    st.nscopes += 1
    st.scope = st.nscopes
    if not local:                          # a module-level function sees no kernel's inner functions
        st.local_functions = {}
    st.env = dict(free)
    st.tuple_names = dict(tuples)          # tuple parameters: their components are bound below
    st.returned_arrays = {}
    arrays, views = {**free_arrays, **arrays}, {**free_views, **views}
    tested = names_tested_before_returns(src.tree)
    for pname, atom_ in scalars:
        # a literal copied into a parameter that a returning branch tests would let numba prune
        # that branch in some generated copies of the body and not others (the reverse sweep
        # replays it), leaving a returned value undefined where numba types it; a cast is no
        # constant to numba's pruning
        op = f"cast_{st.atom_type(atom_)}" if isinstance(atom_, Lit) and pname in tested else "copy"
        st.env[pname] = st.emit_assign(out, st.fresh(pname), Prim(op, (atom_,)))
    st.src, st.arrays, st.views = src, arrays, views
    stmts = prepare_body(src, values=True)
    if tuples:
        stmts = index_tuple_parameters(st, src, stmts, tuples)
    body = block(st, stmts)
    for t in walk(body):                   # refusals name the helper's file, not the caller's
        if getattr(t, "file", None) is None:
            t.file = src.file
    out.extend(body)
    results = []
    k = 0
    while f"{RET}{k}" in st.env or f"{RET}{k}" in st.tuple_names or f"{RET}{k}" in st.returned_arrays:
        # a returned tuple inside the returned tuple (`return point, (x, y, z)`) is a nested list,
        # a returned array an ArrayResult
        name = f"{RET}{k}"
        results.append(st.returned_arrays[name] if name in st.returned_arrays else
                       tuple_components(st, name) if name in st.tuple_names else st.env[name])
        k += 1
    if len(results) == 1 and isinstance(results[0], list):
        results = results[0]                # `return t` of a tuple t returns t itself, not (t,)
    st.call_stack.pop()
    (st.src, st.env, st.arrays, st.views, st.prefix, st.line, st.scope, st.local_functions,
     st.outer_scopes, st.tuple_names, st.returned_arrays) = saved
    return results


def autodiff_call(st: LoweringState, node, out):
    if len(node.args) < 2:
        raise st.err(node, "autodiff(mode, f, args...) needs a mode and a function")
    mode = _mode_of(st, node.args[0])
    resolved = resolve_call(st, ast.Call(node.args[1], [], [])) if isinstance(node.args[1], (ast.Name, ast.Attribute)) else None
    if not resolved or resolved[0] != "device":
        raise st.err(node.args[1], "autodiff's second argument must name a device function")
    fn = resolved[1]
    args = []
    for a in node.args[2:]:
        act = resolve_call(st, a) if isinstance(a, ast.Call) else None
        cls = act[1] if act and act[0] == "activity" else None
        if cls is None:               # a bare value is Const, as in the host API
            args.append(_nested_value(st, "const", a, None, out))
            continue
        name = {"Const": "const", "Duplicated": "duplicated", "DuplicatedNoNeed": "duplicated_no_need",
                "Active": "active"}.get(cls.__name__)
        if name is None:
            raise st.err(a, f"{cls.__name__} is not supported inside autodiff")
        shadow = a.args[1] if name.startswith("duplicated") and len(a.args) > 1 else None
        if name.startswith("duplicated") and shadow is None:
            raise st.err(a, f"{cls.__name__} needs a value and its shadow")
        args.append(_nested_value(st, name, a.args[0], shadow, out))
    targets = []
    returns_value = any(isinstance(r, ast.Return) and r.value is not None
                        and not (isinstance(r.value, ast.Constant) and r.value.value is None)
                        for r in ast.walk(parse_kernel(fn).tree))
    n_out = sum(1 for x in args if x.activity == "active") if mode == "reverse" else int(returns_value)
    for _ in range(n_out):
        t = st.temp()
        targets.append(t)
    nested = Nested(mode, fn, args, targets, st.line)
    out.append(nested)
    st.nested.append(nested)
    for t in targets:
        st.types[t] = "float64"          # refined by the engine once f's types are known
    return targets


def _mode_of(st: LoweringState, node) -> str:
    if isinstance(node, ast.Constant) and node.value in ("forward", "reverse"):
        return node.value
    if isinstance(node, (ast.Name, ast.Attribute)):
        obj = None
        if isinstance(node, ast.Name) and node.id not in st.env:
            try:
                obj = resolve_global(st.src, node.id)
            except KeyError:
                pass
        elif isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name):
                try:
                    obj = getattr(resolve_global(st.src, base.id), node.attr, None)
                except KeyError:
                    pass
        if obj in ("forward", "reverse"):
            return obj
    raise st.err(node, "autodiff's mode must be Forward or Reverse (from harness)")


def _nested_value(st: LoweringState, activity, value_node, shadow_node, out):
    for n in (value_node, shadow_node):
        if isinstance(n, ast.Name) and n.id in st.views:
            raise st.err(n, f"'{n.id}' is a row of an array: autodiff takes whole arrays")
    if isinstance(value_node, ast.Name) and value_node.id in st.arrays:
        shadow = None
        if shadow_node is not None:
            if not (isinstance(shadow_node, ast.Name) and shadow_node.id in st.arrays):
                raise st.err(shadow_node, "the shadow of an array must be an array parameter")
            shadow = st.arrays[shadow_node.id]
        return NestedArg(activity, st.arrays[value_node.id], shadow, is_array=True)
    value = expression(st, value_node, out)
    shadow = expression(st, shadow_node, out) if shadow_node is not None else None
    return NestedArg(activity, value, shadow, is_array=False)
