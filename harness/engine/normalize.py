"""Lower a kernel's Python AST into the engine's SSA form (see ir.py).

Passes, in order, each small:
  1. `control.py`: early `return` becomes a `_live` flag that guards the rest of the body, so
     every thread reaches the end of the kernel (the reverse sweep and Active reductions need it);
     `break`/`continue` become per-loop flags.
  2. `Lowerer`: expressions become three-address statements; scalar locals are renamed to SSA
     names; `and`/`or`/conditional expressions become `If` statements (lazy, as in Python: a
     guarded read must stay guarded); `If` joins get explicit phi moves; types are inferred.
     Loops are lowered by `lower_loops.py`, calls and CUDA intrinsics by `lower_calls.py`.
Anything outside the supported subset raises UnsupportedError naming the file and line.
"""
from __future__ import annotations

import ast
import math

from ..core.errors import UnsupportedError
from .control import LIVE, RET, prepare_body  # noqa: F401  (LIVE: the flag's name, for tests and tools)
from .frontend import KernelSource, module_kind, resolve_global
from .ir import Assign, If, KernelIR, Lit, Load, Param, Prim, Special, Store
from .lower_calls import CallLowering
from .lower_loops import LoopLowering
from .types import infer_prim_type, literal_type


_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "bitand", ast.BitOr: "bitor",
           ast.BitXor: "bitxor", ast.LShift: "lshift", ast.RShift: "rshift"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_INDEX_ATTRS = {"threadIdx": "tid", "blockIdx": "bid", "blockDim": "bdim", "gridDim": "gdim"}


# ----------------------------------------------------------------------------- pass 2: SSA

class Lowerer(LoopLowering, CallLowering):
    def __init__(self, src: KernelSource, params: list[Param]):
        self.src = src
        self.params = {p.name: p for p in params}
        # array names visible in the current body -> kernel array parameter (inlined helpers rename)
        self.arrays: dict[str, str] = {p.name: p.name for p in params if p.kind == "array"}
        self.prefix = ""                       # SSA base-name prefix inside an inlined helper
        self.call_stack: list[str] = [src.name]
        self.calls: list[tuple[str, str, int]] = []        # (callee, caller, line) of inlined helpers
        self.nested: list = []                 # device-side autodiff calls (ir.Nested)
        self.nodiff: set[str] = set()          # values computed inside custom-rule primals
        self.nodiff_depth = 0
        self.nloops = 0
        self.njumps = 0
        self.temps: set[str] = set()           # names made by temp(): safe to rename in place
        # every name the kernel's source uses: temporaries must never shadow one of them
        self.user_names = {n.id for n in ast.walk(src.tree) if isinstance(n, ast.Name)}
        self.local_arrays: list[Param] = []
        self.depth_ctl = 0                     # >0 inside an if or a loop
        self.types: dict[str, str] = {p.name: p.dtype for p in params if p.kind == "scalar"}
        self.env: dict[str, str] = {p.name: p.name for p in params if p.kind == "scalar"}
        self.versions: dict[str, int] = {}
        self.taken: set[str] = set(self.params)
        self.ntemp = 0
        self.line = src.tree.lineno

    # -- names
    def fresh(self, base: str) -> str:
        base = (self.prefix + base).replace("!", "_")
        n = self.versions.get(base, -1) + 1
        while True:
            name = base if n == 0 else f"{base}_{n}"
            if name not in self.taken:
                break
            n += 1
        self.versions[base] = n
        self.taken.add(name)
        return name

    def temp(self) -> str:
        while True:
            self.ntemp += 1
            name = f"_t{self.ntemp}"
            if name not in self.taken and name not in self.user_names:
                break
        self.taken.add(name)
        self.temps.add(name)
        return name

    def err(self, node, what) -> UnsupportedError:
        return self.src.unsupported(node, what)

    # -- emit
    def emit_assign(self, out: list, target: str, expr) -> str:
        out.append(Assign(target, expr, self.line))
        if self.nodiff_depth:
            self.nodiff.add(target)
        if isinstance(expr, Load):
            self.types[target] = self.params[expr.array].dtype
        elif isinstance(expr, Special):
            self.types[target] = "int64"
        else:
            self.types[target] = infer_prim_type(expr.op, [self.atom_type(a) for a in expr.args])
        return target

    def atom_type(self, a) -> str:
        return literal_type(a.value) if isinstance(a, Lit) else self.types[a]

    # -- statements
    def block(self, stmts: list) -> list:
        out = []
        for s in stmts:
            self.line = s.lineno
            self.stmt(s, out)
        return out

    def stmt(self, s, out):
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise self.err(s, "chained assignment `a = b = ...` is not supported; split it")
            self.assign(s.targets[0], s.value, out)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, s.value, out)
        elif isinstance(s, ast.AugAssign):
            op = _BINOPS.get(type(s.op))
            if op is None:
                raise self.err(s, f"augmented operator {type(s.op).__name__} is not supported")
            if isinstance(s.target, ast.Name):
                cur = self.name_atom(s.target)
                rhs = self.expr(s.value, out)
                new = self.fresh(s.target.id)
                self.emit_assign(out, new, Prim(op, (cur, rhs)))
                self.env[s.target.id] = new
            elif isinstance(s.target, ast.Subscript):
                array, index = self.subscript(s.target, out)
                old = self.emit_assign(out, self.temp(), Load(array, index))
                rhs = self.expr(s.value, out)
                new = self.emit_assign(out, self.temp(), Prim(op, (old, rhs)))
                out.append(Store(array, index, new, self.line))
            else:
                raise self.err(s, "unsupported augmented-assignment target")
        elif isinstance(s, ast.If):
            cond = self.expr(s.test, out)
            self.if_stmt(cond, lambda o: o.extend(self.block(s.body)),
                         lambda o: o.extend(self.block(s.orelse)), out)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):          # docstring or bare literal
                return
            if isinstance(s.value, ast.Call):
                self.call(s.value, out, nvalues=-1)
                return
            raise self.err(s, f"statement `{ast.unparse(s).strip()}` is not supported by the AD transform yet")
        elif isinstance(s, ast.Pass):
            return
        elif isinstance(s, ast.For):
            self.for_loop(s, out)
        elif isinstance(s, ast.While):
            self.while_loop(s, out)
        elif isinstance(s, (ast.Break, ast.Continue)):
            raise self.err(s, f"`{type(s).__name__.lower()}` outside a loop body")
        else:
            raise self.err(s, f"{type(s).__name__} statements are not supported by the AD transform")

    def assign(self, target, value, out):
        if isinstance(target, ast.Name) and isinstance(value, ast.Call) \
                and (self.resolve_call(value) or (None, None))[1] in ("cuda.shared.array", "cuda.local.array"):
            return self.alloc(target.id, value, out)
        if isinstance(target, ast.Name):
            if target.id in self.arrays:
                raise self.err(target, f"cannot rebind array '{target.id}'")
            new = self.fresh(target.id)
            self.expr(value, out, target=new)
            self.env[target.id] = new
        elif isinstance(target, ast.Subscript):
            array, index = self.subscript(target, out)
            v = self.expr(value, out)
            out.append(Store(array, index, v, self.line))
        elif isinstance(target, ast.Tuple):
            if self.is_call_to(value, "cuda", "grid") or self.is_call_to(value, "cuda", "gridsize"):
                kind = "grid" if self.is_call_to(value, "cuda", "grid") else "gsize"
                n = self.literal_int(value.args[0])
                if n != len(target.elts):
                    raise self.err(target, f"cuda.{value.func.attr}({n}) unpacked into {len(target.elts)} names")
                atoms = [self.emit_assign(out, self.temp(), Special(f"{kind}.{k}")) for k in range(n)]
            elif isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
                atoms = [self.expr(v, out) for v in value.elts]
            elif isinstance(value, ast.Call):
                atoms = self.call(value, out, nvalues=len(target.elts), as_list=True)
                if len(atoms) != len(target.elts):
                    raise self.err(target, f"call returns {len(atoms)} values, unpacked into {len(target.elts)}")
            else:
                raise self.err(target, "tuple assignment needs a tuple of the same length or cuda.grid(n)")
            for t, a in zip(target.elts, atoms):
                if not isinstance(t, ast.Name):
                    raise self.err(t, "only names may be unpacked into")
                new = self.fresh(t.id)
                self.emit_assign(out, new, Prim("copy", (a,)))
                self.env[t.id] = new
        else:
            raise self.err(target, "unsupported assignment target")

    def if_stmt(self, cond, then_fn, else_fn, out):
        """Lower an if/else given callbacks that lower each branch; add phi moves at the join."""
        line = self.line
        before = dict(self.env)
        body: list = []
        self.depth_ctl += 1
        then_fn(body)
        after_then = dict(self.env)
        self.env = dict(before)
        orelse: list = []
        else_fn(orelse)
        self.depth_ctl -= 1
        after_else = dict(self.env)
        phis = []
        merged = dict(before)
        for var in sorted(set(after_then) | set(after_else)):
            a, b = after_then.get(var), after_else.get(var)
            if (a is None) != (b is None) and var.startswith(RET):
                # a returned value set on one path only (`if c: return a` ... `return b`): the
                # other path has not returned yet and sets it later; it holds a typed zero until then
                missing = body if a is None else orelse
                zero = self.emit_assign(missing, self.fresh(var), Prim(f"cast_{self.types[a or b]}", (Lit(0),)))
                a, b = a or zero, b or zero
            if a is None or b is None:        # defined on one path only: stays branch-local
                continue
            if a == b:
                merged[var] = a
                continue
            joined = self.fresh(var)
                # a phi's type unifies its sources (e.g. int on one path, float on the other)
            self.types[joined] = infer_prim_type("add", [self.types[a], self.types[b]]) \
                if self.types[a] != self.types[b] else self.types[a]
            phis.append((joined, a, b))
            merged[var] = joined
        self.env = merged
        self.line = line
        out.append(If(cond, body, orelse, line, phis))

    # -- expressions
    def expr(self, node, out, target: str | None = None):
        """Lower an expression; return its atom. With `target`, the value lands in that name."""
        atom = self._expr(node, out)
        if target is None:
            return atom
        if out and isinstance(out[-1], Assign) and out[-1].target == atom and atom in self.temps:
            out[-1].target = target                   # rename the last temp instead of copying
            self.types[target] = self.types.pop(atom)
            return target
        self.emit_assign(out, target, Prim("copy", (atom,)))
        return target

    def _expr(self, node, out):
        self.line = getattr(node, "lineno", self.line)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)):
                return Lit(node.value)
            raise self.err(node, f"constant {node.value!r} is not a number")
        if isinstance(node, ast.Name):
            return self.name_atom(node)
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise self.err(node, f"operator {type(node.op).__name__} is not supported")
            a, b = self.expr(node.left, out), self.expr(node.right, out)
            return self.emit_assign(out, self.temp(), Prim(op, (a, b)))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                    and type(node.operand.value) in (int, float):
                return Lit(-node.operand.value)
            a = self.expr(node.operand, out)
            if isinstance(node.op, ast.UAdd):
                return a
            op = {ast.USub: "neg", ast.Not: "not", ast.Invert: "invert"}[type(node.op)]
            return self.emit_assign(out, self.temp(), Prim(op, (a,)))
        if isinstance(node, ast.Compare):
            if len(node.ops) == 1:
                a, b = self.expr(node.left, out), self.expr(node.comparators[0], out)
                return self.emit_assign(out, self.temp(), Prim(_CMPOPS[type(node.ops[0])], (a, b)))
            # a < b < c  ->  (a < b) and (b < c), evaluated lazily
            parts, left = [], node.left
            for op, right in zip(node.ops, node.comparators):
                parts.append(ast.copy_location(ast.Compare(left, [op], [right]), node))
                left = right
            return self._expr(ast.copy_location(ast.BoolOp(ast.And(), parts), node), out)
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node, out)
        if isinstance(node, ast.IfExp):
            cond = self.expr(node.test, out)
            key = result = self.temp()         # a pseudo-variable joined by the if's phi
            def branch(value):
                def lower(o):
                    v = self.expr(value, o)
                    self.env[key] = self.emit_assign(o, self.fresh(result), Prim("copy", (v,)))
                return lower
            self.if_stmt(cond, branch(node.body), branch(node.orelse), out)
            return self.env.pop(key)
        if isinstance(node, ast.Subscript):
            shape = self.shape_ref(node)
            if shape is not None:
                return self.emit_assign(out, self.temp(), Special(shape))
            array, index = self.subscript(node, out)
            return self.emit_assign(out, self.temp(), Load(array, index))
        if isinstance(node, ast.Attribute):
            return self.attribute(node, out)
        if isinstance(node, ast.Call):
            return self.call(node, out)
        raise self.err(node, f"expression `{ast.unparse(node)}` is not supported by the AD transform")

    def bool_op(self, node, out):
        """`a and b` as a lazy if-chain producing a bool (only b's truth value, as numba does for bools)."""
        is_and = isinstance(node.op, ast.And)
        key = self.temp()
        first = self.expr(node.values[0], out)
        self.env[key] = self.emit_assign(out, self.fresh("_b"), Prim("cast_bool", (first,)))
        for value in node.values[1:]:
            cond = self.env[key] if is_and else self.emit_assign(out, self.temp(), Prim("not", (self.env[key],)))
            def then(o, value=value):
                v = self.expr(value, o)
                self.env[key] = self.emit_assign(o, self.fresh("_b"), Prim("cast_bool", (v,)))
            self.if_stmt(cond, then, lambda o: None, out)
        return self.env.pop(key)

    def name_atom(self, node):
        name = node.id
        if name in self.env:
            return self.env[name]
        if name in self.arrays:
            raise self.err(node, f"array '{name}' used as a scalar value; index it")
        try:
            obj = resolve_global(self.src, name)
        except KeyError:
            raise self.err(node, f"name '{name}' is not defined") from None
        if isinstance(obj, (bool, int, float)) and not isinstance(obj, type):
            return Lit(obj)                   # module-level constants are folded
        raise self.err(node, f"global '{name}' ({type(obj).__name__}) cannot be used as a value in a kernel")

    def subscript(self, node, out):
        if not isinstance(node.value, ast.Name) or node.value.id not in self.arrays:
            raise self.err(node, f"`{ast.unparse(node)}`: only array parameters can be indexed")
        p = self.params[self.arrays[node.value.id]]
        return p.name, self.index_atoms(p, node.slice, node, out)

    def index_atoms(self, p, index_node, node, out) -> tuple:
        elts = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
        if any(isinstance(e, ast.Slice) for e in elts):
            raise self.err(node, "slices are not supported; index single elements")
        if len(elts) != p.ndim:
            raise self.err(node, f"'{p.name}' has {p.ndim} dimension(s) but is indexed with {len(elts)}; "
                                 f"index all dimensions at once, e.g. {p.name}[i, j]")
        index = tuple(self.expr(e, out) for e in elts)
        for a, e in zip(index, elts):
            if self.atom_type(a) not in ("int64", "int32", "uint32", "uint64", "int16", "int8", "bool"):
                raise self.err(e, f"index `{ast.unparse(e)}` of '{p.name}' is not an integer")
        return index

    def shape_ref(self, node):
        v = node.value
        if isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(v.value, ast.Name) \
                and v.value.id in self.arrays:
            k = self.literal_int(node.slice)
            return f"shape.{self.arrays[v.value.id]}.{k}"
        return None

    def literal_int(self, node) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        raise self.err(node, f"`{ast.unparse(node)}` must be an integer literal here")

    def dotted(self, node):
        """('cuda', ['threadIdx', 'x']) for cuda.threadIdx.x; None if the base is no module."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.env:
            return None
        try:
            obj = resolve_global(self.src, node.id)
        except KeyError:
            return None
        kind = module_kind(obj)
        if kind is None:
            return None
        parts.reverse()
        if kind == "numba" and parts and parts[0] == "cuda":
            kind, parts = "cuda", parts[1:]
        return kind, parts, obj

    def attribute(self, node, out):
        if isinstance(node.value, ast.Name) and node.value.id in self.arrays and node.attr == "size":
            return self.emit_assign(out, self.temp(), Special(f"size.{self.arrays[node.value.id]}"))
        d = self.dotted(node)
        if d:
            kind, parts, _ = d
            if kind == "cuda" and parts == ["laneid"]:
                return self.emit_assign(out, self.temp(), Special("laneid"))
            if kind == "cuda" and parts == ["warpsize"]:
                return Lit(32)
            if kind == "cuda" and len(parts) == 2 and parts[0] in _INDEX_ATTRS and parts[1] in "xyz":
                return self.emit_assign(out, self.temp(), Special(f"{_INDEX_ATTRS[parts[0]]}.{parts[1]}"))
            if kind in ("math", "numpy") and len(parts) == 1 and parts[0] in ("pi", "e", "inf"):
                return Lit(getattr(math, parts[0]))
        raise self.err(node, f"attribute `{ast.unparse(node)}` is not supported in a kernel")

    def is_call_to(self, node, kind, name) -> bool:
        if not isinstance(node, ast.Call):
            return False
        d = self.dotted(node.func) if isinstance(node.func, ast.Attribute) else None
        return bool(d) and d[0] == kind and d[1] == [name]












def lower_kernel(src: KernelSource, params: list[Param], device: bool = False) -> KernelIR:
    """Lower a kernel (or, with device=True, a device function whose returns become ir.returns)."""
    lowerer = Lowerer(src, params)
    stmts = lowerer.block(prepare_body(src, values=device))
    returns = []
    k = 0
    while f"{RET}{k}" in lowerer.env:
        returns.append(lowerer.env[f"{RET}{k}"])
        k += 1
    return KernelIR(src.name, src.file, params, stmts, lowerer.types, returns=returns,
                    calls=lowerer.calls, nested=lowerer.nested, nodiff=lowerer.nodiff,
                    local_arrays=lowerer.local_arrays)
