"""Normalisation of a kernel's source: the everyday numba.cuda dialect rewritten into the forms the
lowering handles, before anything else reads the tree.

Contract (the engine's lowering and the adapters' translator both read kernels through it, via
`frontend.parse_kernel`, so the three accept the same language):

- `normalise(tree, globals)` returns a new `ast.FunctionDef` (the input is not changed). Every node
  it makes carries the line and column of the source construct it replaces, so a refusal names
  the kernel's own line.
- It only rewrites constructs whose meaning it can decide from the source and the module's
  globals; everything else is left as written (for the lowering to accept or refuse):

  `cuda.shared.array` / `cuda.local.array`      -> `cuda.<space>.array(SHAPE, 'dtype')`: positional,
    (any spelling of the module; positional      SHAPE an int literal or a tuple of them (module
     or keyword arguments)                       constants and constant expressions folded), the
                                                 dtype a numpy dtype name as a string
  `c = cuda.const.array_like(G)`, G a module     -> `c = cuda.local.array(G.shape, 'dtype')` plus one
    numpy array of at most CONST_ARRAY_LIMIT      store of each of G's values (the constants travel
    elements                                     in the code; generated kernels cannot see G)
  `G[i]`, G such a module array                  -> the same local copy, named G, first in the body
  `len(a)`, `len(a[i])`                          -> `a.shape[0]`, `a[i].shape[0]`
  `s = a.shape`, then `s[0]`, `len(s)`, `M, N = s`  -> `a.shape[0]`, `a.ndim`, `M, N = a.shape[0], a.shape[1]`
    (s bound once, a an array name never rebound: s is the shape itself, and its binding goes)
  `d = a.dtype`, then `d.type(v)`, `dtype=d`     -> `a.dtype.type(v)`, `dtype=a.dtype` (the same conditions)
  `len(a.shape)`                                 -> `a.ndim`
  `M, N = a.shape` (any target count)            -> `M, N = a.shape[0], a.shape[1]`
  `p = (x, y)` ... `a[p]` (p bound only to n-tuples, read only as a whole index, an atomic's index
    or an argument of a call, `f(a, p)`)         -> `p__0 = x`, `p__1 = y` ... `a[p__0, p__1]`, `f(a, (p__0, p__1))`
  `a.shape[K]`, `cuda.grid(K)`, `cuda.gridsize(K)` with K a constant expression -> K folded
  `t: T = v`                                     -> `t = v` (numba ignores the annotation)
  `t: T` (no value), `assert c, msg`, `raise E`  -> removed (see ASSERTS)
  `print(...)` as a statement                    -> removed (see PRINTS)
  `a = b = v` (a a name no other target reads)   -> `a = v` then `b = a`
  `if C:` / `x if C else y`, C a constant        -> the branch C selects (see BRANCHES)
  `... f(u)[k] ...`, f a device function returning -> `_tuple_L_C_0, ..., _tuple_L_C_{n-1} = f(u)` first,
    n values, in a statement run once               then `_tuple_L_C_k` in place (tuple_elements.py)

- `constant_value(node, globals, local_names)` is the folding rule itself: the value of a literal,
  a module-level int/float/bool constant (a name the function never assigns), or + - * // % ** <<
  >> & | ^ and unary - + ~ over them, or a tuple of such; None for anything else.
- `dtype_name(node, globals, local_names)` is the numpy dtype name of the number type an array
  dtype spells (`float32`, `numba.float32`, `types.float64`, `np.float32`, `'float32'`), None if it
  spells none.
- `local_names(tree)`: the names a function binds (parameters and assignment targets), which
  therefore never resolve to module constants.

ASSERTS: numba.cuda compiles `assert c` as a check that, when it fails, ends the thread (the
exception is reported only under `cuda.jit(debug=True)`; the simulator raises it). The primal
keeps that meaning: the engine's primal launch is numba's own compile of the kernel (and the
primal reference runs it through numba too). The derivative kernels do not check asserts: they
differentiate the kernel on inputs where its assertions hold, and an assert contributes nothing
to a derivative. (Kernels whose primal the engine generates, harness/engine/rules/libm.py and nested
autodiff, drop the check as well.) A `raise` statement is the same check made by hand (`if bad:
raise BoundsError` is `assert not bad`): numba.cuda compiles it to end the thread in the same way,
so it is removed in the same way.

BRANCHES: numba prunes a branch whose condition is a constant (a literal, a module constant, a local
bound once to a constant) before it types the function, so the other side never exists in the
primal. The lowering does the same: otherwise a derivative kernel would keep both sides, and when
numba prunes one copy of the branch but not another (the reverse sweep recomputes the forward's
statements, so a condition's name is bound twice), a value defined only on the pruned side has no
type and numba rejects the generated kernel. The constant is decided with Python's comparison of
the same int and float values numba compares.

PRINTS: `print` writes to the console and nothing else; the derivative kernels leave it out, the
primal (numba's compile of the kernel) keeps it.
"""
from __future__ import annotations

import ast
import copy
import operator
import types

import numpy as np

from harness.engine.frontend.tuple_elements import hoist_tuple_elements

CONST_ARRAY_LIMIT = 1024          # elements of a cuda.const.array_like copied into the code

_ARRAY_CALLS = {("shared", "array"), ("local", "array")}
_FOLD_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
                ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
                ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.Div: operator.truediv}
_FOLD_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


def local_names(tree: ast.FunctionDef) -> set[str]:
    names = {a.arg for a in tree.args.args}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
    return names


def _global(name: str, globals_: dict, local: set[str]):
    if name in local:
        return None
    if name in globals_:
        return globals_[name]
    import builtins
    return getattr(builtins, name, None)


def dotted_parts(node) -> tuple[str, list[str]] | None:
    """('np', ['float32']) for `np.float32`: the base name and the attributes after it, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id, parts[::-1]) if isinstance(node, ast.Name) else None


def resolve_dotted(node, globals_: dict, local: set[str]):
    """The object a name or attribute chain of module globals names (`np.float32`), else None."""
    dotted = dotted_parts(node)
    if dotted is None:
        return None
    obj = _global(dotted[0], globals_, local)
    for p in dotted[1]:
        if obj is None:
            return None
        obj = getattr(obj, p, None)
    return obj


def constant_value(node, globals_: dict, local: set[str]):
    """The value of a constant expression over literals and module constants, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)):
        return node.value
    if isinstance(node, ast.Name):
        v = _global(node.id, globals_, local) if node.id in globals_ else None
        if isinstance(v, tuple) and v and all(_number(x) for x in v):
            return v                                 # a module tuple: SM_SIZE = (TPB, TPB)
        return v if _number(v) and not isinstance(v, type) else None
    if isinstance(node, ast.Attribute):              # a constant of an imported module: cfg.TPB
        v = resolve_dotted(node, globals_, local)
        return v if isinstance(v, (bool, int, float)) and not isinstance(v, type) \
            and isinstance(node.value, ast.Name) and isinstance(_global(node.value.id, globals_, local),
                                                               types.ModuleType) else None
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLD_BINOPS:
        a, b = constant_value(node.left, globals_, local), constant_value(node.right, globals_, local)
        if not (_number(a) and _number(b)):
            return None                              # tuples are not arithmetic here (no `(1,) * n`)
        if isinstance(node.op, (ast.Pow, ast.LShift)) and abs(b) > 64:
            return None                              # a shape never needs more; folding it could take forever
        try:
            return _FOLD_BINOPS[type(node.op)](a, b)
        except (ArithmeticError, ValueError, TypeError):
            return None
    if isinstance(node, ast.UnaryOp) and type(node.op) in _FOLD_UNARY:
        a = constant_value(node.operand, globals_, local)
        try:
            return None if a is None else _FOLD_UNARY[type(node.op)](a)
        except TypeError:
            return None
    if isinstance(node, ast.Tuple):
        values = [constant_value(e, globals_, local) for e in node.elts]
        return None if any(v is None for v in values) else tuple(values)
    return None


def _number(v) -> bool:
    return isinstance(v, (bool, int, float, np.integer, np.floating))


def _int_constant(node, globals_, local):
    v = constant_value(node, globals_, local)
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, tuple) and v and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
        return tuple(int(x) for x in v)
    return None


def dtype_name(node, globals_: dict, local: set[str]) -> str | None:
    if node is None:
        return None
    try:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found = np.dtype(node.value)
        else:
            obj = resolve_dotted(node, globals_, local)
            if type(obj).__module__.startswith("numba") and not isinstance(obj, types.ModuleType):
                found = np.dtype(str(obj))
            elif isinstance(obj, type) and issubclass(obj, np.generic) or isinstance(obj, np.dtype):
                found = np.dtype(obj)
            else:
                return None
    except (TypeError, ValueError):
        return None
    return found.name if found.kind in "biuf" else None        # numbers only: no records, no objects


def cuda_member(node, globals_, local):
    """('shared', 'array') for any spelling of numba.cuda.shared.array; None otherwise."""
    dotted = dotted_parts(node)
    if dotted is None:
        return None
    obj, parts = _global(dotted[0], globals_, local), dotted[1]
    if not isinstance(obj, types.ModuleType):
        return None
    if obj.__name__ == "numba" and parts and parts[0] == "cuda":
        parts = parts[1:]
    elif not obj.__name__.startswith("numba.cuda"):
        return None
    return tuple(parts)


def _array_like(node) -> bool:
    """A name, or a row of one (`loc[0]`): what len() of an array is written over."""
    return isinstance(node, ast.Name) or isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)


def _at(new, old):
    """`new` (a fresh node or tree) placed at `old`'s source position, every descendant too."""
    for n in ast.walk(new):
        ast.copy_location(n, old)
    return new


def _literal(value, at):
    if isinstance(value, tuple):
        return _at(ast.Tuple([ast.Constant(v) for v in value], ast.Load()), at)
    return _at(ast.Constant(value), at)


class _Normalise(ast.NodeTransformer):
    def __init__(self, globals_: dict, local: set[str]):
        self.globals, self.local = globals_, local

    def member(self, func):
        return cuda_member(func, self.globals, self.local)

    # -- statements
    def visit_Assert(self, node):
        return None                               # see ASSERTS in the module docstring

    def visit_Raise(self, node):
        return None                               # an assert written by hand: see ASSERTS

    def visit_AnnAssign(self, node):
        if node.value is None:
            return None                           # a declaration: no value, no effect
        new = ast.copy_location(ast.Assign([node.target], node.value), node)
        return self.visit(new)

    def visit_Expr(self, node):
        self.generic_visit(node)
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print" \
                and _global("print", self.globals, self.local) is print:
            return None                           # output only: see PRINTS in the module docstring
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        if len(node.targets) > 1:
            return self.chained(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call) \
                and self.member(node.value.func) == ("const", "array_like"):
            return self.const_array(node, node.targets[0].id, node.value)
        target, value = node.targets[-1], node.value
        if isinstance(target, (ast.Tuple, ast.List)) and self.is_shape(value):
            n = len(target.elts)
            node.value = _at(ast.Tuple([ast.Subscript(copy.deepcopy(value), ast.Constant(k), ast.Load())
                                        for k in range(n)], ast.Load()), value)
        return node

    def chained(self, node):
        """`a = b = v` as `a = v; b = a`: v evaluated once, each target bound in turn. Needs a name
        target that no other target reads (`x[i] = n = v` too); otherwise left as written."""
        names = [t for t in node.targets if isinstance(t, ast.Name)]
        for first in names:
            others = [t for t in node.targets if t is not first]
            if any(isinstance(n, ast.Name) and n.id == first.id for t in others for n in ast.walk(t)):
                continue
            out = [ast.copy_location(ast.Assign([first], node.value), node)]
            for t in others:
                out.append(_at(ast.Assign([t], ast.Name(first.id, ast.Load())), node))
            return [self.visit_Assign(s) if isinstance(s.targets[0], ast.Name) else s for s in out]
        return node

    def const_array(self, node, name, call):
        args = list(call.args) + [kw.value for kw in call.keywords if kw.arg in (None, "ary")]
        source = resolve_dotted(args[0], self.globals, self.local) if len(args) == 1 else None
        if not isinstance(source, np.ndarray) or source.size > CONST_ARRAY_LIMIT or source.dtype.kind not in "biuf":
            return node                           # left for the lowering to refuse
        module = _cuda_module_name(self.globals, self.local)
        if module is None:
            return node
        alloc = ast.Call(ast.Attribute(ast.Attribute(module(), "local", ast.Load()), "array", ast.Load()), [], [])
        return _filled_local(name, source, alloc, node)

    # -- expressions
    def is_shape(self, node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name) \
            and node.value.id in self.local

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "len" and _global("len", self.globals, self.local) is len \
                and len(node.args) == 1 and not node.keywords and self.is_shape(node.args[0]):
            return _at(ast.Attribute(node.args[0].value, "ndim", ast.Load()), node)
        if isinstance(f, ast.Name) and f.id == "len" and _global("len", self.globals, self.local) is len \
                and len(node.args) == 1 and not node.keywords and _array_like(node.args[0]):
            shape = ast.Attribute(node.args[0], "shape", ast.Load())
            return _at(ast.Subscript(shape, ast.Constant(0), ast.Load()), node)
        member = self.member(f)
        if member in _ARRAY_CALLS:
            return self.array_call(node)
        if member in (("grid",), ("gridsize",)) and len(node.args) == 1:
            k = _int_constant(node.args[0], self.globals, self.local)
            if isinstance(k, int):
                node.args = [_literal(k, node.args[0])]
        return node

    def array_call(self, node):
        shape, dtype = (list(node.args) + [None, None])[:2]
        for kw in node.keywords:
            if kw.arg == "shape":
                shape = kw.value
            elif kw.arg == "dtype":
                dtype = kw.value
            else:
                return node                       # an unknown keyword: numba's refusal, the lowering's message
        if shape is None or dtype is None or len(node.args) > 2:
            return node
        dims = _int_constant(shape, self.globals, self.local)
        name = dtype_name(dtype, self.globals, self.local)
        shape_node = _literal(dims, shape) if dims is not None else shape
        dtype_node = _at(ast.Constant(name), dtype) if name is not None else dtype
        return ast.copy_location(ast.Call(node.func, [shape_node, dtype_node], []), node)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if self.is_shape(node.value):
            k = _int_constant(node.slice, self.globals, self.local)
            if isinstance(k, int) and not isinstance(node.slice, ast.Constant):
                node.slice = _literal(k, node.slice)
        return node


def normalise(tree: ast.FunctionDef, globals_: dict) -> ast.FunctionDef:
    """The function's tree in the normal form above (a new tree; line numbers kept)."""
    new = copy.deepcopy(tree)
    local = local_names(tree)
    _inline_shape_names(new)
    _split_index_tuples(new, local)
    out = _Normalise(globals_, local).visit(new)
    _copy_module_arrays(out, globals_, local)
    _hoist_shared(out, globals_, local)
    _fold_constant_branches(out, globals_, local)
    hoist_tuple_elements(out, globals_, local)
    _fill_empty_blocks(out)
    return out


def _binding_counts(fn: ast.FunctionDef) -> dict[str, int]:
    """How many times the function's body assigns (or deletes) each name."""
    stores: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    return stores


_INLINED_ARRAY_ATTRIBUTES = ("shape", "dtype")


def _inline_shape_names(fn: ast.FunctionDef) -> None:
    """`s = a.shape` names an array's shape tuple, which numba.cuda keeps as a value; the lowering
    reads shapes by component, so every read of `s` becomes `a.shape` itself and the binding goes.
    `d = a.dtype` is the same for the array's dtype (read as `d.type(v)`, a cast to it, or as a
    local array's dtype): the lowering knows `a`'s dtype when it compiles, not a dtype value.
    Only where that cannot change a value: `s` bound once (by this statement) and `a` a name the
    function binds at most once (a parameter, an allocated array), so `a.shape` is the same tuple
    wherever `s` is read. Anything else stays for the lowering to judge."""
    stores = _binding_counts(fn)
    shapes = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and isinstance(n.value, ast.Attribute) and n.value.attr in _INLINED_ARRAY_ATTRIBUTES \
                and isinstance(n.value.value, ast.Name) and stores.get(n.targets[0].id) == 1 \
                and stores.get(n.value.value.id, 0) <= 1 and n.value.value.id != n.targets[0].id:
            shapes[n.targets[0].id] = (n, n.value.value.id)
    if not shapes:
        return

    class Inline(ast.NodeTransformer):
        def visit_Assign(self, node):
            if any(node is binding for binding, _ in shapes.values()):
                return None
            return self.generic_visit(node)

        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Load) and node.id in shapes:
                binding, array = shapes[node.id]
                return _at(ast.Attribute(ast.Name(array, ast.Load()), binding.value.attr, ast.Load()), node)
            return node
    Inline().visit(fn)


def _split_index_tuples(fn: ast.FunctionDef, local: set[str]) -> None:
    """`pos = (x, y)` then `out[pos]`: a name bound only to tuples of n values and read only as a
    whole index is n names, one per component (`pos__0 = x`, `pos__1 = y`, `out[pos__0, pos__1]`).
    numba keeps the tuple as a value; the lowering reads indices by component. Each binding still
    evaluates its components in order, once, where it stood, so every read sees the same values."""
    params = {a.arg for a in fn.args.args}
    parents = {id(c): n for n in ast.walk(fn) for c in ast.iter_child_nodes(n)}
    width: dict[str, int | None] = {}
    read: dict[str, bool] = {}
    for n in ast.walk(fn):
        if not isinstance(n, ast.Name) or n.id in params:
            continue
        up = parents.get(id(n))
        if isinstance(n.ctx, ast.Store):
            ok = (isinstance(up, ast.Assign) and up.targets == [n] and isinstance(up.value, ast.Tuple)
                  and not any(isinstance(e, ast.Starred) for e in up.value.elts))
            k = len(up.value.elts) if ok else None
            width[n.id] = k if width.get(n.id, k) == k else None
        elif isinstance(n.ctx, ast.Load):
            read[n.id] = read.get(n.id, True) and (isinstance(up, ast.Subscript) and up.slice is n
                                                   or _atomic_index(up) is n or _passed_whole(up, n))
        else:
            width[n.id] = None
    split = {name: k for name, k in width.items() if k and read.get(name)
             and not any(f"{name}__{i}" in local for i in range(k))}
    if not split:
        return

    class Split(ast.NodeTransformer):
        def visit_Assign(self, node):
            self.generic_visit(node)
            target = node.targets[0]
            if len(node.targets) == 1 and isinstance(target, ast.Name) and target.id in split:
                return [_at(ast.Assign([ast.Name(f"{target.id}__{i}", ast.Store())], e), node)
                        for i, e in enumerate(node.value.elts)]
            return node

        def components(self, node):
            return _at(ast.Tuple([_at(ast.Name(f"{node.id}__{i}", ast.Load()), node)
                                  for i in range(split[node.id])], ast.Load()), node)

        def visit_Subscript(self, node):
            self.generic_visit(node)
            if isinstance(node.slice, ast.Name) and node.slice.id in split:
                node.slice = self.components(node.slice)
            return node

        def visit_Call(self, node):
            self.generic_visit(node)
            index = _atomic_index(node)
            if isinstance(index, ast.Name) and index.id in split:
                node.args[1] = self.components(index)
            node.args = [self.components(a) if isinstance(a, ast.Name) and a.id in split and _passed_whole(node, a)
                         else a for a in node.args]
            return node

    Split().visit(fn)
    local.update(f"{name}__{i}" for name, k in split.items() for i in range(k))


def _passed_whole(call, name) -> bool:
    """`f(a, p)`: the tuple p passed whole to a function (a device function takes its components);
    `len(p)` is left alone."""
    return isinstance(call, ast.Call) and any(a is name for a in call.args) \
        and not (isinstance(call.func, ast.Name) and call.func.id == "len")


def _atomic_index(node):
    """The index argument of `cuda.atomic.add(a, index, v)` (any op, any spelling of the module
    path ending in `atomic.<op>`), or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) >= 2 \
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "atomic":
        return node.args[1]
    return None


def _copy_module_arrays(fn: ast.FunctionDef, globals_, local) -> None:
    """A module-level numpy array the kernel indexes (`PRICES[i]`) is a constant to numba.cuda;
    it becomes a local array holding its values, declared first (as `cuda.const.array_like`
    does), so the generated kernels, which cannot see the module, hold the same constants."""
    seen, first = [], []
    for n in ast.walk(fn):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id not in local \
                and n.value.id not in seen:
            value = globals_.get(n.value.id)
            if isinstance(value, np.ndarray) and value.size <= CONST_ARRAY_LIMIT and value.dtype.kind in "biuf" \
                    and value.ndim >= 1:
                seen.append(n.value.id)
    module = _cuda_module_name(globals_, local)
    for name in seen if module is not None else []:
        decl = ast.Call(ast.Attribute(ast.Attribute(module(), "local", ast.Load()), "array", ast.Load()), [], [])
        first += _filled_local(name, globals_[name], decl, fn.body[0])
    fn.body[:0] = first


def _cuda_module_name(globals_, local):
    """A maker of an expression naming numba.cuda in the kernel's module (`cuda`, `numba.cuda`)."""
    for name, value in globals_.items():
        if isinstance(value, types.ModuleType) and value.__name__ == "numba.cuda" and name not in local:
            return lambda: ast.Name(name, ast.Load())
    for name, value in globals_.items():
        if isinstance(value, types.ModuleType) and value.__name__ == "numba" and name not in local:
            return lambda: ast.Attribute(ast.Name(name, ast.Load()), "cuda", ast.Load())
    return None


def _filled_local(name: str, source, alloc: ast.Call, at) -> list:
    """`name = <alloc>(shape, 'dtype')` and one store of each of `source`'s values, placed at `at`."""
    shape = tuple(int(n) for n in source.shape)
    alloc.args = [_literal(shape if len(shape) != 1 else shape[0], at), ast.Constant(source.dtype.name)]
    out = [_at(ast.Assign([ast.Name(name, ast.Store())], alloc), at)]
    for index in np.ndindex(*shape):
        key = ast.Constant(index[0]) if len(index) == 1 else ast.Tuple([ast.Constant(k) for k in index], ast.Load())
        out.append(_at(ast.Assign([ast.Subscript(ast.Name(name, ast.Load()), key, ast.Store())],
                                  ast.Constant(source[index].item())), at))
    return out


def _hoist_shared(fn: ast.FunctionDef, globals_, local) -> None:
    """A shared array declared inside an `if` or a loop, or after an early `return`, moves to the top
    of the body: numba.cuda allocates shared memory statically, per block, wherever it is declared,
    so the array exists (with undefined contents) on every path. Only a name assigned once, with a constant shape and
    dtype, moves; anything else stays for the lowering to judge."""
    counts: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
    hoisted = []

    def movable(s) -> bool:
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                and isinstance(s.value, ast.Call) and counts.get(s.targets[0].id) == 1):
            return False
        call = s.value
        return cuda_member(call.func, globals_, local) == ("shared", "array") and len(call.args) == 2 \
            and not call.keywords and isinstance(call.args[1], ast.Constant) \
            and all(isinstance(d, ast.Constant) for d in
                    (call.args[0].elts if isinstance(call.args[0], ast.Tuple) else [call.args[0]]))

    def visit(block, nested):
        kept = []
        returned = False                  # a top-level declaration after an early return would end up
        for s in block:                   # under the return's guard (control.py): it moves up too
            if (nested or returned) and movable(s):
                hoisted.append(s)
                continue
            returned = returned or (not nested and not isinstance(s, ast.FunctionDef)
                                    and any(isinstance(n, ast.Return) for n in ast.walk(s)))
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and not isinstance(s, ast.FunctionDef):
                    setattr(s, field, visit(inner, True))
            kept.append(s)
        return kept

    fn.body = visit(fn.body, False)
    fn.body[:0] = hoisted


_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}


def _constant_locals(fn: ast.FunctionDef, globals_, local) -> dict:
    """Locals the function binds exactly once, to a number constant (`t = 1.04`, anywhere in its own
    body): every read of such a name that runs sees that constant."""
    stores = _binding_counts(fn)
    for a in fn.args.args:
        stores[a.arg] = stores.get(a.arg, 0) + 1
    inner: set[str] = set()
    for n in ast.walk(fn):
        if isinstance(n, (ast.FunctionDef, ast.Lambda)) and n is not fn:
            inner |= {m.id for m in ast.walk(n) if isinstance(m, ast.Name)}   # scopes of their own
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            inner |= set(n.names)
    found = {}
    for s in ast.walk(fn):
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                and stores.get(s.targets[0].id) == 1 and s.targets[0].id not in inner:
            v = constant_value(s.value, globals_, local)
            if isinstance(v, (bool, int, float)):
                found[s.targets[0].id] = v
    return found


def constant_truth(test, globals_: dict, local: set[str]):
    """True or False when `test` is a constant condition (comparisons, `and`/`or`/`not` over
    constant numbers), else None."""
    if isinstance(test, ast.Compare):
        values = [constant_value(e, globals_, local) for e in [test.left, *test.comparators]]
        if not all(isinstance(v, (bool, int, float)) for v in values) or \
                not all(type(op) in _COMPARE for op in test.ops):
            return None
        return all(_COMPARE[type(op)](a, b) for op, a, b in zip(test.ops, values, values[1:]))
    if isinstance(test, ast.BoolOp):
        truths = [constant_truth(v, globals_, local) for v in test.values]
        if any(t is None for t in truths):
            return None
        return all(truths) if isinstance(test.op, ast.And) else any(truths)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        t = constant_truth(test.operand, globals_, local)
        return None if t is None else not t
    v = constant_value(test, globals_, local)
    return bool(v) if isinstance(v, (bool, int, float)) else None


def _fold_constant_branches(fn: ast.FunctionDef, globals_, local) -> None:
    """`if C:` and `x if C else y` with C constant become the side C selects (BRANCHES)."""
    constants = _constant_locals(fn, globals_, local)
    scope = ({**globals_, **constants}, local - set(constants))

    class Fold(ast.NodeTransformer):
        def visit_If(self, node):
            self.generic_visit(node)
            truth = constant_truth(node.test, *scope)
            if truth is None:
                return node
            return (node.body if truth else node.orelse) or None

        def visit_IfExp(self, node):
            self.generic_visit(node)
            truth = constant_truth(node.test, *scope)
            return node if truth is None else (node.body if truth else node.orelse)

    Fold().visit(fn)


def _fill_empty_blocks(tree):
    """A body whose statements were all removed (an `if` of asserts) holds a `pass`."""
    for n in ast.walk(tree):
        if isinstance(getattr(n, "body", None), list) and not n.body:
            n.body.append(ast.copy_location(ast.Pass(), n))
