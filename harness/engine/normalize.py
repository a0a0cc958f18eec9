"""Lower a kernel's Python AST into the engine's SSA form (see ir.py).

Passes, in order, each small:
  1. `lower_returns`: early `return` becomes a `_live` flag that guards the rest of the body, so
     every thread reaches the end of the kernel (the reverse sweep and Active reductions need it).
  2. `Lowerer`: expressions become three-address statements; scalar locals are renamed to SSA
     names; `and`/`or`/conditional expressions become `If` statements (lazy, as in Python: a
     guarded read must stay guarded); `If` joins get explicit phi moves; types are inferred.
Anything outside the supported subset raises UnsupportedError naming the file and line.
"""
from __future__ import annotations

import ast
import copy
import math

from ..errors import UnsupportedError
from .frontend import FUNCTIONS, KernelSource, module_kind, resolve_global
from .ir import Alloc, Assign, Atomic, Barrier, If, KernelIR, Lit, Load, Loop, Param, Prim, Special, Store
from .types import infer_prim_type, literal_type, promote as _promote


def promote_types(a: str, b: str) -> str:
    if a == b:
        return a
    if a == "bool" and b == "bool":
        return "bool"
    return _promote([a, b])

# Internal flags live in the same environment as the kernel's own names; the '!' keeps them apart
# (no Python identifier contains it) and fresh() turns it into '_' for the generated code.
LIVE = "!live"
RET = "!ret"
BREAK = "!brk"
SKIP = "!skip"
UNROLL_LIMIT = 16            # static range loops up to this trip count are unrolled

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "bitand", ast.BitOr: "bitor",
           ast.BitXor: "bitxor", ast.LShift: "lshift", ast.RShift: "rshift"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_INDEX_ATTRS = {"threadIdx": "tid", "blockIdx": "bid", "blockDim": "bdim", "gridDim": "gdim"}


# ----------------------------------------------------------------------------- pass 1: returns

def _always_returns(stmts) -> bool:
    for s in stmts:
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.If) and s.orelse and _always_returns(s.body) and _always_returns(s.orelse):
            return True
    return False


def _contains_return(stmts) -> bool:
    return any(isinstance(n, ast.Return) for s in stmts for n in ast.walk(s))


def _return_assign(s: ast.Return, src: KernelSource, values: bool) -> list:
    """`return e` inside a device function assigns the returned value(s) to _ret0, _ret1, ..."""
    bare = s.value is None or (isinstance(s.value, ast.Constant) and s.value.value is None)
    if bare:
        return []
    if not values:
        raise src.unsupported(s, "a kernel cannot return a value")
    elts = s.value.elts if isinstance(s.value, ast.Tuple) else [s.value]
    names = [ast.Name(f"{RET}{k}", ast.Store()) for k in range(len(elts))]
    target = names[0] if len(names) == 1 else ast.Tuple(names, ast.Store())
    value = elts[0] if len(elts) == 1 else ast.Tuple(elts, ast.Load())
    return [ast.copy_location(ast.Assign([target], value), s)]


def lower_returns(stmts: list, src: KernelSource, values: bool = False) -> list:
    """Rewrite `return` into `_live = False` plus guards. The caller sets `_live = True` first."""
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            out += _return_assign(s, src, values)
            out.append(ast.copy_location(ast.Assign([ast.Name(LIVE, ast.Store())], ast.Constant(False)), s))
            return out                       # the rest of this block is dead code
        if isinstance(s, (ast.For, ast.While)) and _contains_return([s]):
            raise src.unsupported(s, "`return` inside a loop is not supported yet")
        if isinstance(s, ast.If) and _contains_return([s]):
            s = copy.copy(s)
            s.body = lower_returns(s.body, src, values)
            s.orelse = lower_returns(s.orelse, src, values)
            out.append(s)
            rest = stmts[k + 1:]
            if rest:
                guard = ast.If(ast.Name(LIVE, ast.Load()), lower_returns(rest, src, values), [])
                out.append(ast.copy_location(guard, rest[0]))
            return out
        out.append(s)
    return out


def prepare_body(src: KernelSource, values: bool) -> list:
    """The function body with returns lowered; a single trailing return needs no flag."""
    body = list(src.tree.body)
    if not _contains_return(body):
        return body
    if isinstance(body[-1], ast.Return) and not _contains_return(body[:-1]):
        return body[:-1] + _return_assign(body[-1], src, values)
    init = ast.copy_location(ast.Assign([ast.Name(LIVE, ast.Store())], ast.Constant(True)), src.tree)
    return [init] + lower_returns(body, src, values)


def _has_jump(stmts) -> bool:
    """break/continue belonging to this loop body (not to a nested loop)."""
    for s in stmts:
        if isinstance(s, (ast.Break, ast.Continue)):
            return True
        if isinstance(s, ast.If) and (_has_jump(s.body) or _has_jump(s.orelse)):
            return True
    return False


def _uses(stmts, name) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for s in stmts for n in ast.walk(s))


def _assigned_names(stmts) -> set[str]:
    names = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
    return names


def lower_jumps(stmts: list, src: KernelSource, brk: str, skip: str) -> list:
    """`break` sets the loop-carried flag _brk (later iterations do nothing; a while loop stops);
    `continue` sets _skip, reset at the top of every iteration. Statements after a jump are guarded."""
    if not _has_jump(stmts):
        return stmts
    body = _lower_jumps_block(stmts, src, brk, skip)
    if _uses(body, skip):
        body = [ast.Assign([ast.Name(skip, ast.Store())], ast.Constant(False))] + body
    guard = ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load()))
    if _uses(body, brk):
        body = [ast.If(guard, body, [])]
    for n in body:
        ast.fix_missing_locations(n)
        ast.copy_location(n, stmts[0])
    return body


def _lower_jumps_block(stmts, src, brk, skip):
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, (ast.Break, ast.Continue)):
            flag = brk if isinstance(s, ast.Break) else skip
            out.append(ast.copy_location(ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(True)), s))
            return out
        if isinstance(s, ast.If) and _has_jump([s]):
            s = copy.copy(s)
            s.body = _lower_jumps_block(s.body, src, brk, skip)
            s.orelse = _lower_jumps_block(s.orelse, src, brk, skip)
            out.append(s)
            rest = stmts[k + 1:]
            if rest:
                live = ast.BoolOp(ast.And(), [ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load())),
                                              ast.UnaryOp(ast.Not(), ast.Name(skip, ast.Load()))]) \
                    if _uses([s], skip) and _uses([s], brk) else \
                    ast.UnaryOp(ast.Not(), ast.Name(skip if _uses([s], skip) else brk, ast.Load()))
                out.append(ast.copy_location(ast.If(live, _lower_jumps_block(rest, src, brk, skip), []), rest[0]))
            return out
        out.append(s)
    return out


# ----------------------------------------------------------------------------- pass 2: SSA

class Lowerer:
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

    # -- loops
    def for_loop(self, s: ast.For, out):
        it = s.iter
        if s.orelse:
            raise self.err(s, "`for ... else` is not supported")
        if isinstance(it, (ast.Tuple, ast.List)) and isinstance(s.target, ast.Name) and not _has_jump(s.body):
            for elt in it.elts:              # `for d in (16, 8, 4)`: unrolled over the literal values
                self.env[s.target.id] = self.expr(elt, out, target=self.fresh(s.target.id))
                out.extend(self.block(s.body))
            return
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and not it.keywords and 1 <= len(it.args) <= 3):
            raise self.err(s, "only `for v in range(...)` loops are supported")
        if not isinstance(s.target, ast.Name):
            raise self.err(s.target, "the loop variable must be a single name")
        args = list(it.args)
        step_node = args[2] if len(args) == 3 else ast.Constant(1)
        start_node = args[0] if len(args) >= 2 else ast.Constant(0)
        stop_node = args[1] if len(args) >= 2 else args[0]
        step = self.literal_int(step_node) if not (isinstance(step_node, ast.UnaryOp)
                                                   and isinstance(step_node.operand, ast.Constant)) \
            else -self.literal_int(step_node.operand)
        if step == 0:
            raise self.err(step_node, "range() step must not be zero")
        start, stop = self.expr(start_node, out), self.expr(stop_node, out)
        if isinstance(start, Lit) and isinstance(stop, Lit) and not _has_jump(s.body):
            count = len(range(start.value, stop.value, step))
            if count <= UNROLL_LIMIT:          # small static loops: unrolled, pure SSA, no tape
                for value in range(start.value, stop.value, step):
                    self.env[s.target.id] = self.emit_assign(out, self.fresh(s.target.id), Prim("copy", (Lit(value),)))
                    out.extend(self.block(s.body))
                return
        brk, skip = self.jump_flags()
        body = lower_jumps(s.body, self.src, brk, skip)
        self.loop(s, out, "for", body, start=start, stop=stop, step=step, var=s.target.id, brk=brk)

    def while_loop(self, s: ast.While, out):
        if s.orelse:
            raise self.err(s, "`while ... else` is not supported")
        brk, skip = self.jump_flags()
        body = lower_jumps(s.body, self.src, brk, skip)
        self.loop(s, out, "while", body, test=s.test, brk=brk)

    def jump_flags(self) -> tuple[str, str]:
        self.njumps += 1
        return f"{BREAK}{self.njumps}", f"{SKIP}{self.njumps}"

    def loop(self, s, out, kind, body, *, start=None, stop=None, step=1, var=None, test=None, brk=BREAK):
        """Lower a dynamic loop. Registers for every scalar the body reassigns are created before
        the loop; their types may widen in the body (s = 0; s += x[k]), in which case the body is
        lowered again with the wider type so no float is mistaken for an integer."""
        assigned = _assigned_names(body) | ({brk} if _uses(body, brk) else set())
        carried_vars = sorted(v for v in assigned if v in self.env or v == brk)
        if brk in carried_vars and brk not in self.env:
            self.env[brk] = self.emit_assign(out, self.fresh(brk), Prim("copy", (Lit(False),)))
        line = self.line
        widened: dict[str, str] = {}
        for _attempt in range(3):
            snapshot = self.snapshot()
            pre: list = []
            registers = {}
            for v in carried_vars:
                reg = self.fresh(v)
                self.emit_assign(pre, reg, Prim("copy", (self.env[v],)))
                if v in widened:
                    self.types[reg] = widened[v]
                registers[v] = reg
                self.env[v] = reg
            loop_var = self.fresh(var) if var else None
            if loop_var:
                self.types[loop_var] = "int64"
                self.env[var] = loop_var
            header, cond = [], None
            if test is not None:
                cond = self.expr(ast.copy_location(ast.BoolOp(ast.And(), [
                    ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load())), test]), test)
                    if brk in carried_vars else test, header)
            self.depth_ctl += 1
            lowered = self.block(body)
            self.depth_ctl -= 1
            carried = [(registers[v], self.env[v]) for v in carried_vars if self.env[v] != registers[v]]
            changed = {v: self.types[registers[v]] for v in carried_vars
                       if promote_types(self.types[registers[v]], self.atom_type(self.env[v])) != self.types[registers[v]]}
            if not changed:
                break
            for v in changed:
                widened[v] = promote_types(self.types[registers[v]], self.atom_type(self.env[v]))
            self.restore(snapshot)
        else:
            raise self.err(s, "loop-carried types did not settle")
        self.nloops += 1
        out.extend(pre)
        out.append(Loop(kind, lowered, carried, line, self.nloops, var=loop_var, start=start, stop=stop,
                        step=step, header=header, cond=cond))
        for v in carried_vars:
            self.env[v] = registers[v]       # after the loop a register holds the final value
        if var:
            self.env.pop(var, None)          # Python leaves it defined; kernels rarely rely on it
        self.line = line

    def snapshot(self):
        return (dict(self.env), dict(self.versions), set(self.taken), self.ntemp, dict(self.types),
                set(self.temps),
                len(self.calls), len(self.nested), set(self.nodiff), self.nloops, self.njumps)

    def restore(self, snap):
        (self.env, self.versions, self.taken, self.ntemp, self.types, self.temps, ncalls, nnested, self.nodiff,
         self.nloops, self.njumps) = snap
        del self.calls[ncalls:]
        del self.nested[nnested:]

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

    def resolve_call(self, node):
        """('rule', name) | ('cuda', 'cuda.x') | ('device', fn) | ('autodiff', None) | ('activity', cls)."""
        f = node.func
        obj = None
        if isinstance(f, ast.Attribute):
            d = self.dotted(f)
            if d is None:
                return None
            kind, parts, mod = d
            if kind == "cuda":
                return "cuda", "cuda." + ".".join(parts)
            obj = mod
            for p in parts:
                obj = getattr(obj, p, None)
        elif isinstance(f, ast.Name):
            if f.id in self.env or f.id in self.arrays:
                return None
            try:
                obj = resolve_global(self.src, f.id)
            except KeyError:
                return None
        if obj is None:
            return None
        name = FUNCTIONS.get(id(obj))
        if name is None and type(obj).__module__.startswith("numba.core.types"):
            name = f"cast_{obj}"              # numba.float32(x) and friends
        if name is not None:
            return "rule", name
        from .. import activity, device
        if obj is device.autodiff:
            return "autodiff", None
        if isinstance(obj, type) and issubclass(obj, (activity.Const, activity.Duplicated, activity.Active)):
            return "activity", obj
        try:
            from .frontend import python_function
            return "device", python_function(obj)
        except TypeError:
            return None

    def call(self, node, out, nvalues: int = 1, as_list: bool = False):
        """Lower a call; returns one atom, or with as_list the list of its result atoms."""
        if node.keywords:
            raise self.err(node, "keyword arguments are not supported in kernel calls")
        resolved = self.resolve_call(node)
        if resolved is None:
            raise self.err(node, f"call to `{ast.unparse(node.func)}` is not supported by the AD transform yet")
        kind, what = resolved
        if kind == "device":
            results = self.device_call(what, node, out)
            if nvalues == -1:
                return None
            if as_list:
                return results
            if len(results) != 1:
                raise self.err(node, f"{what.__name__} returns {len(results)} values; unpack them")
            return results[0] if nvalues == 1 else results
        if kind == "autodiff":
            targets = self.autodiff_call(node, out)
            if nvalues == -1 or as_list:
                return None if nvalues == -1 else targets
            if len(targets) != 1:
                raise self.err(node, f"this autodiff call returns {len(targets)} values; unpack them")
            return targets[0]
        if kind == "cuda":
            return self.cuda_call(what, node, out)
        if kind != "rule":
            raise self.err(node, f"`{ast.unparse(node.func)}` is not supported here")
        name = what
        args = tuple(self.expr(a, out) for a in node.args)
        if name in ("min", "max") and len(args) > 2:        # min(a, b, c) -> min(min(a, b), c)
            acc = args[0]
            for a in args[1:]:
                acc = self.emit_assign(out, self.temp(), Prim(name, (acc, a)))
            return acc
        if name == "cast_int64" and len(args) == 1 and self.atom_type(args[0]).startswith("float"):
            name = "trunc_int"
        return self.emit_assign(out, self.temp(), Prim(name, args))

    def cuda_call(self, name, node, out):
        if name in ("cuda.grid", "cuda.gridsize"):
            n = self.literal_int(node.args[0])
            if n != 1:
                raise self.err(node, f"{name}({n}) returns a tuple: unpack it, e.g. i, j = {name}({n})")
            return self.emit_assign(out, self.temp(), Special("grid.0" if name == "cuda.grid" else "gsize.0"))
        if name == "cuda.syncthreads":
            if self.depth_ctl:
                raise self.err(node, "cuda.syncthreads() under a condition or in a dynamic loop is not supported "
                                     "(every thread must reach the barrier; early returns before it count too)")
            out.append(Barrier(self.line))
            return None
        if name.startswith("cuda.atomic."):
            op = name.rsplit(".", 1)[1]
            if op not in ("add", "sub", "max", "min"):
                raise self.err(node, f"cuda.atomic.{op} cannot be differentiated: its result depends on the "
                                     "order in which threads arrive (only add, sub, max and min are supported)")
            arr, idx, val = node.args
            if not (isinstance(arr, ast.Name) and arr.id in self.arrays):
                raise self.err(node, "the first argument of an atomic must be an array")
            index = self.index_atoms(self.params[self.arrays[arr.id]], idx, node, out)
            value = self.expr(val, out)
            target = self.temp()
            out.append(Atomic(op, self.arrays[arr.id], index, value, target, self.line))
            self.types[target] = self.params[self.arrays[arr.id]].dtype
            return target
        if name in ("cuda.shfl_sync", "cuda.shfl_up_sync", "cuda.shfl_down_sync", "cuda.shfl_xor_sync"):
            mask, value, lane = (self.expr(a, out) for a in node.args)
            op = name[len("cuda."):-len("_sync")]
            t = self.temp()
            out.append(Assign(t, Prim(op, (mask, value, lane)), self.line))
            self.types[t] = self.atom_type(value)
            return t
        if name in ("cuda.shared.array", "cuda.local.array"):
            raise self.err(node, f"{name}(...) must be assigned to a name")
        raise self.err(node, f"`{name}` is not supported by the AD transform yet")

    def alloc(self, name: str, call, out):
        space = "shared" if "shared" in ast.unparse(call.func) else "local"
        if self.depth_ctl and space == "shared":
            raise self.err(call, "declare shared arrays at the top level of the kernel")
        shape_node, dtype_node = call.args[0], call.args[1] if len(call.args) > 1 else None
        for kw in call.keywords:
            if kw.arg == "shape":
                shape_node = kw.value
            elif kw.arg == "dtype":
                dtype_node = kw.value
        dims = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
        shape = tuple(self.literal_int(d) for d in dims)
        dtype = self.dtype_of(dtype_node)
        local = self.fresh(name) if name in self.taken else name
        self.taken.add(local)
        p = Param(local, space, dtype, len(shape), shape)
        self.params[local] = p
        self.arrays[name] = local
        self.local_arrays.append(p)
        out.append(Alloc(p, self.line))

    def dtype_of(self, node) -> str:
        import numpy as np
        obj = None
        if isinstance(node, ast.Name):
            obj = resolve_global(self.src, node.id) if node.id not in self.env else None
        elif isinstance(node, ast.Attribute):
            d = self.dotted(node)
            if d:
                obj = d[2]
                for p in d[1]:
                    obj = getattr(obj, p, None)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            return np.dtype(node.value).name
        if obj is None:
            raise self.err(node, "array dtype must be a numba or numpy type")
        try:
            return np.dtype(str(obj) if type(obj).__module__.startswith("numba") else obj).name
        except TypeError:
            raise self.err(node, f"unknown dtype {ast.unparse(node)}") from None

    # -- device functions: inlined, each recorded as a child compile job
    def device_call(self, fn, node, out) -> list:
        from .custom import rule_for
        rule = rule_for(fn)
        if rule is None:
            return self.inline(fn, node.args, out, node)
        operands = [self.expr(a, out) for a in node.args]
        self.nodiff_depth += 1
        value = self.inline(fn, operands, out, node)
        if len(value) != 1:
            raise self.err(node, f"a custom rule needs {fn.__name__} to return one value")
        partials = self.inline(rule.partials, operands + value, out, node)
        self.nodiff_depth -= 1
        if len(partials) != len(operands):
            raise self.err(node, f"the rule for {fn.__name__} returns {len(partials)} partial(s) "
                                 f"for {len(operands)} operand(s)")
        t = self.temp()
        out.append(Assign(t, Prim("custom", tuple(value) + tuple(operands), tuple(partials)), self.line))
        self.types[t] = self.atom_type(value[0])
        return [t]

    def inline(self, fn, args, out, node) -> list:
        """Lower `fn`'s body in place with its parameters bound to `args` (AST nodes or atoms)."""
        from .frontend import parse_kernel
        src = parse_kernel(fn)
        if src.name in self.call_stack:
            raise self.err(node, f"recursive call to {src.name} cannot be differentiated")
        if len(args) != len(src.params):
            raise self.err(node, f"{src.name} takes {len(src.params)} arguments, {len(args)} given")
        arrays, scalars = {}, []
        for pname, a in zip(src.params, args):
            if isinstance(a, ast.Name) and a.id in self.arrays:
                arrays[pname] = self.arrays[a.id]
            else:
                scalars.append((pname, a if not isinstance(a, ast.AST) else self.expr(a, out)))
        saved = (self.src, self.env, self.arrays, self.prefix, self.line)
        self.calls.append((src.name, self.call_stack[-1], self.line))
        self.call_stack.append(src.name)
        self.prefix = f"{self.prefix}{src.name}_"
        self.env = {}
        for pname, atom_ in scalars:
            self.env[pname] = self.emit_assign(out, self.fresh(pname), Prim("copy", (atom_,)))
        self.src, self.arrays = src, arrays
        out.extend(self.block(prepare_body(src, values=True)))
        results = []
        k = 0
        while f"{RET}{k}" in self.env:
            results.append(self.env[f"{RET}{k}"])
            k += 1
        self.call_stack.pop()
        self.src, self.env, self.arrays, self.prefix, self.line = saved
        return results

    # -- device-side autodiff
    def autodiff_call(self, node, out):
        from .ir import Nested, NestedArg
        if len(node.args) < 2:
            raise self.err(node, "autodiff(mode, f, args...) needs a mode and a function")
        mode = self._mode_of(node.args[0])
        resolved = self.resolve_call(ast.Call(node.args[1], [], [])) if isinstance(node.args[1], (ast.Name, ast.Attribute)) else None
        if not resolved or resolved[0] != "device":
            raise self.err(node.args[1], "autodiff's second argument must name a device function")
        fn = resolved[1]
        args = []
        for a in node.args[2:]:
            act = self.resolve_call(a) if isinstance(a, ast.Call) else None
            cls = act[1] if act and act[0] == "activity" else None
            if cls is None:               # a bare value is Const, as in the host API
                args.append(self._nested_value("const", a, None, out))
                continue
            from ..activity import activity_name
            name = {"Const": "const", "Duplicated": "duplicated", "DuplicatedNoNeed": "duplicated_no_need",
                    "Active": "active"}.get(cls.__name__)
            if name is None:
                raise self.err(a, f"{cls.__name__} is not supported inside autodiff")
            shadow = a.args[1] if name.startswith("duplicated") and len(a.args) > 1 else None
            if name.startswith("duplicated") and shadow is None:
                raise self.err(a, f"{cls.__name__} needs a value and its shadow")
            args.append(self._nested_value(name, a.args[0], shadow, out))
        targets = []
        from .frontend import parse_kernel
        returns_value = any(isinstance(r, ast.Return) and r.value is not None
                            and not (isinstance(r.value, ast.Constant) and r.value.value is None)
                            for r in ast.walk(parse_kernel(fn).tree))
        n_out = sum(1 for x in args if x.activity == "active") if mode == "reverse" else int(returns_value)
        for _ in range(n_out):
            t = self.temp()
            targets.append(t)
        nested = Nested(mode, fn, args, targets, self.line)
        out.append(nested)
        self.nested.append(nested)
        for t in targets:
            self.types[t] = "float64"          # refined by the engine once f's types are known
        return targets

    def _mode_of(self, node) -> str:
        if isinstance(node, ast.Constant) and node.value in ("forward", "reverse"):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            obj = None
            if isinstance(node, ast.Name) and node.id not in self.env:
                try:
                    obj = resolve_global(self.src, node.id)
                except KeyError:
                    pass
            elif isinstance(node, ast.Attribute):
                base = node.value
                if isinstance(base, ast.Name):
                    try:
                        obj = getattr(resolve_global(self.src, base.id), node.attr, None)
                    except KeyError:
                        pass
            if obj in ("forward", "reverse"):
                return obj
        raise self.err(node, "autodiff's mode must be Forward or Reverse (from harness.device)")

    def _nested_value(self, activity, value_node, shadow_node, out):
        from .ir import NestedArg
        if isinstance(value_node, ast.Name) and value_node.id in self.arrays:
            shadow = None
            if shadow_node is not None:
                if not (isinstance(shadow_node, ast.Name) and shadow_node.id in self.arrays):
                    raise self.err(shadow_node, "the shadow of an array must be an array parameter")
                shadow = self.arrays[shadow_node.id]
            return NestedArg(activity, self.arrays[value_node.id], shadow, is_array=True)
        value = self.expr(value_node, out)
        shadow = self.expr(shadow_node, out) if shadow_node is not None else None
        return NestedArg(activity, value, shadow, is_array=False)


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
