"""Lowering expressions into three-address statements: operators, comparisons (chains lazily),
`and`/`or`/conditional expressions as `If` statements (a guarded read must stay guarded), names,
subscripts, attributes of arrays and of the cuda module; calls are lowered in lower_calls.py. Each
handler is registered in the lowering's dispatch table (lower_dispatch.py)."""
from __future__ import annotations

import ast
import math

import numpy as np

from harness.engine.frontend import views
from harness.engine.frontend.source import constant as constant_value, resolve_global
from harness.engine.ir.ssa import Lit, Load, Prim, Special
from harness.engine.frontend.lower_branches import if_stmt
from harness.engine.frontend.lower_dispatch import expression, lower_expression, lowers, tuple_value
from harness.engine.frontend.lower_resolve import constant_int, dotted, is_call_to, literal_int, user_module_attribute
from harness.engine.frontend.lower_state import LoweringState

BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "bitand", ast.BitOr: "bitor",
           ast.BitXor: "bitxor", ast.LShift: "lshift", ast.RShift: "rshift"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_INDEX_ATTRS = {"threadIdx": "tid", "blockIdx": "bid", "blockDim": "bdim", "gridDim": "gdim"}


@lowers(ast.Constant)
def constant(st: LoweringState, node, out):
    if isinstance(node.value, (bool, int, float)):
        return Lit(node.value)
    raise st.err(node, f"constant {node.value!r} is not a number")


@lowers(ast.BinOp)
def binary_op(st: LoweringState, node, out):
    op = BINOPS.get(type(node.op))
    if op is None:
        raise st.err(node, f"operator {type(node.op).__name__} is not supported")
    a, b = expression(st, node.left, out), expression(st, node.right, out)
    return st.emit_assign(out, st.temp(), Prim(op, (a, b)))


@lowers(ast.UnaryOp)
def unary_op(st: LoweringState, node, out):
    if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        return Lit(-node.operand.value)
    a = expression(st, node.operand, out)
    if isinstance(node.op, ast.UAdd):
        return a
    op = {ast.USub: "neg", ast.Not: "not", ast.Invert: "invert"}[type(node.op)]
    return st.emit_assign(out, st.temp(), Prim(op, (a,)))


@lowers(ast.Compare)
def compare(st: LoweringState, node, out):
    if len(node.ops) == 1:
        a, b = expression(st, node.left, out), expression(st, node.comparators[0], out)
        return st.emit_assign(out, st.temp(), Prim(_CMPOPS[type(node.ops[0])], (a, b)))
    # a < b < c  ->  (a < b) and (b < c), evaluated lazily
    parts, left = [], node.left
    for op, right in zip(node.ops, node.comparators):
        parts.append(ast.copy_location(ast.Compare(left, [op], [right]), node))
        left = right
    return lower_expression(st, ast.copy_location(ast.BoolOp(ast.And(), parts), node), out)


@lowers(ast.IfExp)
def conditional(st: LoweringState, node, out):
    cond = expression(st, node.test, out)
    key = result = st.temp()         # a pseudo-variable joined by the if's phi
    def branch(value):
        def lower(o):
            v = expression(st, value, o)
            st.env[key] = st.emit_assign(o, st.fresh(result), Prim("copy", (v,)))
        return lower
    if_stmt(st, cond, branch(node.body), branch(node.orelse), out)
    return st.env.pop(key)


@lowers(ast.Subscript)
def subscript_value(st: LoweringState, node, out):
    v, k = node.value, node.slice
    if isinstance(v, ast.Name) and v.id in st.tuple_names:      # `p[k]` of a tuple a device function returned
        return tuple_element(st, node, tuple_components(st, v.id))
    if isinstance(v, (ast.Call, ast.Tuple)):
        # `f(...)[k]` of a device function's tuple result where the normal form left it in place (a
        # branch of `x if c else y`, ...: frontend/tuple_elements.py), `(a, b)[k]`: numba evaluates
        # the whole tuple and takes one element
        items = tuple_value(st, v, out)
        if items is not None and (len(items) > 1 or not isinstance(v, ast.Call)):
            return tuple_element(st, node, items)
    if is_call_to(st, v, "cuda", "grid") or is_call_to(st, v, "cuda", "gridsize"):
        # `cuda.grid(2)[0]`: one component of the tuple the call returns, at a constant position
        n, position = literal_int(st, v.args[0]), constant_int(st, k)
        if n == 1:
            raise st.err(node, f"`{ast.unparse(node)}`: {ast.unparse(v)} returns an integer, not a tuple; "
                               "numba refuses to index it")
        if not (isinstance(position, int) and -n <= position < n):
            raise st.err(node, f"`{ast.unparse(node)}`: the elements of the tuple of {n} values "
                               f"`{ast.unparse(v)}` returns are read at constant positions from {-n} to {n - 1}")
        kind = "grid" if is_call_to(st, v, "cuda", "grid") else "gsize"
        return st.emit_assign(out, st.temp(), Special(f"{kind}.{position % n}"))
    length = windowed_shape(st, node, out)
    if length is not None:
        return length
    shape = shape_ref(st, node)
    if shape is not None:
        return st.emit_assign(out, st.temp(), Special(shape))
    array, index = subscript(st, node, out)
    return st.emit_assign(out, st.temp(), Load(array, index))


@lowers(ast.BoolOp)
def bool_op(st: LoweringState, node, out):
    """`a and b` as a lazy if-chain producing a bool (only b's truth value, as numba does for bools)."""
    is_and = isinstance(node.op, ast.And)
    key = st.temp()
    first = expression(st, node.values[0], out)
    st.env[key] = st.emit_assign(out, st.fresh("_b"), Prim("cast_bool", (first,)))
    for value in node.values[1:]:
        cond = st.env[key] if is_and else st.emit_assign(out, st.temp(), Prim("not", (st.env[key],)))
        def then(o, value=value):
            v = expression(st, value, o)
            st.env[key] = st.emit_assign(o, st.fresh("_b"), Prim("cast_bool", (v,)))
        if_stmt(st, cond, then, lambda o: None, out)
    return st.env.pop(key)


@lowers(ast.Name)
def name_atom(st: LoweringState, node, out=None):
    name = node.id
    if name in st.env:
        return st.env[name]
    if name in st.arrays:
        raise st.err(node, f"array '{name}' used as a scalar value; index it")
    if name in st.tuple_names:
        raise st.err(node, f"'{name}' holds a tuple of {st.tuple_names[name]} values: read its elements "
                           f"(`{name}[0]`), unpack it, or pass it to a device function")
    if name in st.local_functions:
        raise st.err(node, f"inner function {name} used as a value: numba.cuda compiles inner functions "
                     "only where they are called")
    try:
        obj = resolve_global(st.src, name)
    except KeyError:
        raise st.err(node, f"name '{name}' is not defined") from None
    if isinstance(obj, (bool, int, float)) and not isinstance(obj, (type, np.generic)):
        return Lit(obj)                   # module-level constants are folded
    if isinstance(obj, (np.float64, np.int64, np.bool_)):
        return Lit(obj.item())            # `M_PI = np.arccos(-1)`: numba types it as the Python number
    if isinstance(obj, (np.floating, np.integer)) and out is not None:
        # a numpy scalar (`eps = np.float32(1e-6)`): numba folds it as a constant of its own dtype,
        # so a float32 constant keeps float32 arithmetic around it
        kind = np.dtype(type(obj)).name
        if kind in ("float64", "int64", "bool"):
            return Lit(obj.item())
        return st.emit_assign(out, st.temp(), Prim(f"cast_{kind}", (Lit(obj.item()),)))
    raise st.err(node, f"global '{name}' ({type(obj).__name__}) cannot be used as a value in a kernel")


class ArrayResult:
    """An array a device function returns inside a tuple (`return point, (x, y, z)`, MCViNE): the
    kernel array and view entries it names, bound to a name at the call site (numba passes arrays by
    reference, so the name is another name for that array)."""
    def __init__(self, array: str, entries: tuple):
        self.array, self.entries = array, entries

    def __eq__(self, other):
        return isinstance(other, ArrayResult) and (self.array, self.entries) == (other.array, other.entries)


def tuple_components(st: LoweringState, name: str) -> list:
    """The (nested) list of atoms a name bound to a tuple holds (lower_stmts.bind_tuple)."""
    return [tuple_components(st, c) if c in st.tuple_names else st.returned_arrays[c]
            if c in st.returned_arrays else st.env[c]
            for c in (f"{name}__{k}" for k in range(st.tuple_names[name]))]


def tuple_element(st: LoweringState, node, items: list):
    """The element `node.slice` (a constant position) of a tuple held as its components: atoms,
    nested tuples as lists, arrays inside the tuple as ArrayResult."""
    n, position = len(items), constant_int(st, node.slice)
    if not (isinstance(position, int) and -n <= position < n):
        raise st.err(node, f"`{ast.unparse(node)}`: the elements of a tuple of {n} values are read at constant "
                           f"positions from {-n} to {n - 1}")
    item = items[position % n]
    if isinstance(item, (list, ArrayResult)):
        raise st.err(node, f"`{ast.unparse(node)}` is a tuple or an array inside a tuple: unpack it into names")
    return item


def subscript(st: LoweringState, node, out):
    if isinstance(node.value, ast.Name) and node.value.id in st.expired and node.value.id not in st.arrays:
        raise st.err(node, f"'{node.value.id}' was bound to an array inside a block (line "
                     f"{st.expired[node.value.id]}) and is used after that block ended: which array it "
                     "names is decided at run time there; bind it before the block, or index it inside")
    base = array_view(st, node.value, out)
    if base is None:
        raise st.err(node, f"`{ast.unparse(node)}`: only array parameters can be indexed")
    return element_of(st, *base, node.slice, node, out)


def array_view(st: LoweringState, node, out):
    """(array parameter, view entries) of an array-valued expression: an array's name, or a view of
    one such as `a[i]` in `a[i][j]` (evaluated first, as numba does); None for anything else."""
    if isinstance(node, ast.Name) and node.id in st.arrays:
        return st.params[st.arrays[node.id]], st.views.get(node.id, ())
    if is_view(st, node):
        array, entries = view(st, node, out)
        return st.params[array], entries
    return None


def element(st: LoweringState, name: str, index_node, node, out):
    """(kernel array, full index) of `name[index]`."""
    return element_of(st, st.params[st.arrays[name]], st.views.get(name, ()), index_node, node, out)


def element_of(st: LoweringState, p, entries: tuple, index_node, node, out):
    """(kernel array, full index) of an element of array `p` seen through view `entries`; a view's
    fixed leading indices come first, and a window's indices are moved to the array's (views.py)."""
    atoms = index_atoms(st, p, index_node, node, out, fixed=views.fixed_count(entries))
    if views.has_windows(entries):
        return p.name, views.array_index(st, entries, atoms, out)
    return p.name, entries + atoms


def index_atoms(st: LoweringState, p, index_node, node, out, fixed: int = 0) -> tuple:
    elts = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
    if any(isinstance(e, ast.Slice) for e in elts):
        raise st.err(node, f"`{ast.unparse(node)}` slices an array where a number is needed: numba.cuda "
                     "refuses arithmetic on whole arrays too; index single elements (a slice may be passed "
                     "to a device function, bound to a name, iterated over or stored into)")
    ndim = p.ndim - fixed
    if len(elts) != ndim:
        raise st.err(node, f"'{p.name}'{' (a view of it)' if fixed else ''} has {ndim} dimension(s) but is "
                     f"indexed with {len(elts)}; index all dimensions at once, e.g. {p.name}[i, j]")
    index = tuple(expression(st, e, out) for e in elts)
    for a, e in zip(index, elts):
        if st.atom_type(a) not in ("int64", "int32", "uint32", "uint64", "int16", "int8", "bool"):
            raise st.err(e, f"index `{ast.unparse(e)}` of '{p.name}' is not an integer")
    return index


def is_view(st: LoweringState, node) -> bool:
    """Whether `node` spells a view of an array (`a[i, :]`, `a[i]` of a 2-d array, `a[1:4]`,
    `a[i][1:]`), not an element."""
    if not isinstance(node, ast.Subscript):
        return False
    remaining = array_rank(st, node.value)
    elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return remaining is not None and (any(isinstance(e, ast.Slice) for e in elts) or len(elts) < remaining)


def array_rank(st: LoweringState, node) -> int | None:
    """The number of dimensions of an array-valued expression (a name or a view), None otherwise."""
    if isinstance(node, ast.Name) and node.id in st.arrays:
        return st.params[st.arrays[node.id]].ndim - views.fixed_count(st.views.get(node.id, ()))
    if is_view(st, node):
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return array_rank(st, node.value) - sum(not isinstance(e, ast.Slice) for e in elts)
    return None


def view(st: LoweringState, node, out):
    """(kernel array, view entries) of a view such as `a[i, :]`, `a[i]` of a 2-d array, `a[:, j]` or
    the window `a[i - 1:i + 2, j - 1:j + 2]` (views.py), or None when `node` is an element."""
    rank = array_rank(st, node.value) if isinstance(node, ast.Subscript) else None
    if rank is None:
        return None
    elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    fixed = [e for e in elts if not isinstance(e, ast.Slice)]
    if len(fixed) == len(elts) and len(elts) >= rank:
        return None                                        # an element, not a view
    if len(elts) > rank:
        raise st.err(node, f"`{ast.unparse(node)}` has more indices than '{ast.unparse(node.value)}' has dimensions")
    p, entries = array_view(st, node.value, out)
    if not views.has_windows(entries) and _row(elts):     # fixed leading indices, whole trailing dimensions
        atoms = index_atoms(st, type(p)(p.name, p.kind, p.dtype, len(fixed)), ast.Tuple(fixed, ast.Load()),
                            node, out) if fixed else ()
        return p.name, entries + atoms
    new = list(entries) + [None] * (p.ndim - len(entries))
    dims = [d for d, e in enumerate(new) if e is None or isinstance(e, views.Window)]
    for e, d in zip(elts, dims):
        w = new[d]
        if isinstance(e, ast.Slice):
            step = _slice_step(st, e, node)
            if e.lower is None and e.upper is None and step == 1:
                continue                                   # the whole dimension (of the window) stays
            lower, upper = (_integer(st, b, p, node, out) if b is not None else None for b in (e.lower, e.upper))
            size = w.extent if w is not None else st.emit_assign(out, st.temp(), Special(f"shape.{p.name}.{d}"))
            new[d] = views.window(st, w, size, lower, upper, step, out)
        else:
            k = _integer(st, e, p, node, out)
            new[d] = views.array_index(st, (w,), (k,), out)[0] if w is not None else k
    while new and new[-1] is None:
        new.pop()
    for d, e in enumerate(new):                            # a whole dimension before a fixed one
        if e is None:
            new[d] = views.Window(Lit(0), st.emit_assign(out, st.temp(), Special(f"shape.{p.name}.{d}")))
    return p.name, tuple(new)


def _row(elts) -> bool:
    """Whether `elts` are indices followed by whole-dimension slices only (`i, :`)."""
    for k, e in enumerate(elts):
        if isinstance(e, ast.Slice) and (e.lower or e.upper or e.step
                                         or any(not isinstance(x, ast.Slice) for x in elts[k:])):
            return False
    return True


def _slice_step(st: LoweringState, e: ast.Slice, node) -> int:
    if e.step is None:
        return 1
    step = constant_value(st.src, e.step)           # `::2`, `::-1`, `::STRIDE`
    if type(step) is not int or step == 0:
        raise st.err(node, f"`{ast.unparse(node)}`: a slice's step must be a nonzero integer constant here "
                     "(a run-time step is not supported yet)")
    return step


def _integer(st: LoweringState, e, p, node, out):
    a = expression(st, e, out)
    if st.atom_type(a) not in ("int64", "int32", "uint32", "uint64", "int16", "int8", "bool"):
        raise st.err(e, f"index `{ast.unparse(e)}` of '{p.name}' is not an integer")
    return a


def windowed_shape(st: LoweringState, node, out):
    """`w.shape[k]` of a view with a sliced dimension (its length there), or None."""
    v = node.value
    if not (isinstance(v, ast.Attribute) and v.attr == "shape"):
        return None
    base = v.value
    if isinstance(base, ast.Name) and base.id in st.arrays and views.has_windows(st.views.get(base.id, ())):
        name, entries = st.arrays[base.id], st.views[base.id]
    elif isinstance(base, ast.Subscript) and array_rank(st, base.value) is not None and (
            not isinstance(base.value, ast.Name) or views.has_windows(st.views.get(base.value.id, ()))
            or not _row(base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice])):
        found = view(st, base, out)
        if found is None:
            raise st.err(node, f"`{ast.unparse(base)}` is an element, not an array: it has no shape")
        name, entries = found
    else:
        return None
    p = st.params[name]
    k = literal_int(st, node.slice)
    if not 0 <= k < p.ndim - views.fixed_count(entries):
        raise st.err(node, f"`{ast.unparse(node)}`: the view has no dimension {k}")
    return views.dimension_size(st, name, p.ndim, entries, k, out)


def shape_ref(st: LoweringState, node):
    """`a.shape[k]`, of an array, a view, or a row written in place (`len(loc[0])`: its shape
    does not depend on the row's index values, which are not evaluated)."""
    v = node.value
    if not (isinstance(v, ast.Attribute) and v.attr == "shape"):
        return None
    base, fixed = v.value, 0
    if isinstance(base, ast.Subscript) and isinstance(base.value, ast.Name) and base.value.id in st.arrays:
        elts = base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]
        fixed, base = sum(not isinstance(e, ast.Slice) for e in elts), base.value
    if not (isinstance(base, ast.Name) and base.id in st.arrays):
        return None
    k = literal_int(st, node.slice)
    fixed += views.fixed_count(st.views.get(base.id, ()))
    if not 0 <= k < st.params[st.arrays[base.id]].ndim - fixed:
        raise st.err(node, f"`{ast.unparse(node)}`: '{base.id}' has no dimension {k}")
    return f"shape.{st.arrays[base.id]}.{k + fixed}"


@lowers(ast.Attribute)
def attribute(st: LoweringState, node, out):
    if isinstance(node.value, ast.Name) and node.value.id in st.arrays and node.attr in ("size", "ndim"):
        name = node.value.id
        p, entries = st.params[st.arrays[name]], st.views.get(name, ())
        fixed = views.fixed_count(entries)
        if node.attr == "ndim":
            return Lit(p.ndim - fixed)
        if views.has_windows(entries):                      # the product of the view's lengths
            size = views.dimension_size(st, p.name, p.ndim, entries, 0, out)
            for k in range(1, p.ndim - fixed):
                size = st.emit_assign(out, st.temp(), Prim("mul", (
                    size, views.dimension_size(st, p.name, p.ndim, entries, k, out))))
            return size
        if not fixed:
            return st.emit_assign(out, st.temp(), Special(f"size.{p.name}"))
        if p.ndim - fixed == 1:                              # a row: its length
            return st.emit_assign(out, st.temp(), Special(f"shape.{p.name}.{p.ndim - 1}"))
        raise st.err(node, f"`{ast.unparse(node)}` of a view with several dimensions: multiply its shape")
    d = dotted(st, node)
    if d:
        kind, parts, _ = d
        if kind == "cuda" and parts == ["laneid"]:
            return st.emit_assign(out, st.temp(), Special("laneid"))
        if kind == "cuda" and parts == ["warpsize"]:
            return Lit(32)
        if kind == "cuda" and len(parts) == 2 and parts[0] in _INDEX_ATTRS and parts[1] in "xyz":
            return st.emit_assign(out, st.temp(), Special(f"{_INDEX_ATTRS[parts[0]]}.{parts[1]}"))
        if kind in ("math", "numpy") and len(parts) == 1 and type(getattr(d[2], parts[0], None)) is float:
            return Lit(getattr(d[2], parts[0]))     # pi, e, inf, nan, tau, euler_gamma as numba folds them
    value = user_module_attribute(st, node)
    if isinstance(value, (np.float64, np.int64, np.bool_)):
        value = value.item()
    if type(value) in (bool, int, float):           # `config.THRESHOLD` of another module: a constant to numba
        return Lit(value)
    raise st.err(node, f"attribute `{ast.unparse(node)}` is not supported in a kernel")
