"""Translate a numba.cuda kernel (the subset the adapters accept) into another system's kernel source.

The front end here is shared by the Warp and Taichi adapters: it parses the kernel, infers numba's
types (float literals are float64, float32 op float64 is float64, integers mixed with floats give
float64, a variable takes the unification of everything assigned to it), and walks the body calling
one `Target` method per construct. A Target (harness/adapters/warp_source.py, taichi_source.py)
returns text; nothing here knows Warp or Taichi.

Every construct outside the subset raises UnsupportedError naming the kernel's file and line: an
adapter refuses rather than guesses. What the subset holds is listed in docs/engines.md.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import math
import types as pytypes
from dataclasses import dataclass, field

import numpy as np

from harness.engine.rules.custom import rule_for
from harness.engine.rules.ops import OPS
from harness.engine.rules.rng import random_function
from harness.core.errors import UnsupportedError
from harness.adapters.lazy import eager_choice, eager_logic, lower_lazy
from harness.adapters.limits import MISSING_MATH, refusal

# ----------------------------------------------------------------------------- types

F32, F64, INT, BOOL = "f32", "f64", "int", "bool"
FLOATS = (F32, F64)


@dataclass(frozen=True)
class Arr:
    dtype: str          # f32 | f64 | i32 | i64 (element type as stored)
    ndim: int

    @property
    def elem(self) -> str:
        return self.dtype if self.dtype in FLOATS else INT


@dataclass(frozen=True)
class Tup:
    items: tuple


# Integer element types by numpy kind and width: every width numba accepts is an array type in
# Warp and Taichi; the translated code computes with int32 values (as loads and stores cast).
INT_ARRAYS = {f"{kind}{bits}" for kind in "iu" for bits in (8, 16, 32, 64)}


def dtype_code(dtype) -> str:
    dt = np.dtype(dtype)
    if dt == np.float32:
        return F32
    if dt == np.float64:
        return F64
    if dt.kind in "iu" and f"{dt.kind}{dt.itemsize * 8}" in INT_ARRAYS:
        return f"{dt.kind}{dt.itemsize * 8}"
    if dt == np.bool_:
        return BOOL
    raise UnsupportedError(f"arrays of {dt} are outside the adapters' subset")


def unify(a, b):
    """numba's unification of two scalar types (numpy promotion, no value-based casting)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, (Arr, Tup)) or isinstance(b, (Arr, Tup)):
        raise TypeError(f"cannot unify {a} and {b}")
    if F64 in (a, b):
        return F64
    if F32 in (a, b):
        return F64 if INT in (a, b) else F32     # int64 with float32 promotes to float64
    return INT                                   # int with bool


# ----------------------------------------------------------------------------- kernel source

# The engine's front end reads the kernel (harness/engine/frontend/source.py): the same source, the same
# parse and the same name resolution for the bundled engine and the adapters.
from harness.engine.frontend import loop_else
from harness.engine.frontend.desugar import constant_value, cuda_member, local_names
from harness.engine.frontend.lower_local_functions import free_names
from harness.engine.frontend.source import KernelSource, constant, dtype, parse_kernel, python_function, resolve_global


@dataclass
class Source:
    fn: object
    kernel: KernelSource

    @staticmethod
    def of(kernel) -> "Source":
        return Source(python_function(kernel), parse_kernel(kernel))

    name = property(lambda self: self.kernel.name)
    file = property(lambda self: self.kernel.file)
    tree = property(lambda self: self.kernel.tree)
    globals = property(lambda self: self.kernel.globals)
    params = property(lambda self: self.kernel.params)

    @functools.cached_property
    def local_names(self) -> set[str]:
        """The names the function binds, which never resolve to the module's globals."""
        return local_names(self.tree)

    def refuse(self, node, what: str) -> UnsupportedError:
        return self.kernel.unsupported(node, what)

    def lacks(self, node, key: str, system: str, detail: str = "") -> UnsupportedError:
        """A refusal because `system` lacks a construct (harness/adapters/limits.py)."""
        return refusal(key, system, detail, file=self.file, line=getattr(node, "lineno", self.tree.lineno))

    def resolve(self, node):
        """The object a Name or dotted Attribute refers to in the kernel's module, or None."""
        if isinstance(node, ast.Name):
            try:
                return resolve_global(self.kernel, node.id)
            except KeyError:
                return None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        return None


# the math functions the translator recognises (the op table's `translated`), then the builtins it maps
MATH_FUNCTIONS = {getattr(math, op.name): op.name for op in OPS if op.translated}
MATH_FUNCTIONS.update({abs: "abs", min: "min", max: "max"})
# constants a spelling may name ({one}, ...), each a literal of the call's float type
MATH_CONSTANTS = {"one": 1.0, "two": 2.0, "ten": 10.0, "third": 1.0 / 3.0, "deg_per_rad": 180.0 / math.pi,
                  "rad_per_deg": math.pi / 180.0}
CASTS = {float: F64, int: INT, np.float32: F32, np.float64: F64, np.int32: INT, np.int64: INT}


def _cuda_path(src: Source, node) -> str | None:
    """'grid', 'threadIdx.x', 'atomic.add', 'shared.array', ... for a cuda.* reference, else None."""
    # the front end's reading of a numba.cuda member, so `numba.cuda.grid` is `cuda.grid` here too
    member = cuda_member(node, src.globals, src.local_names)
    return ".".join(member) if member else None


def call_kind(src: Source, call: ast.Call) -> str | None:
    """"cast", "pure" (no effect, no memory read) or None for a call (harness/adapters/lazy.py)."""
    path = _cuda_path(src, call.func)
    if path is not None:
        return "pure" if path in ("grid", "gridsize") else None
    if isinstance(call.func, ast.Name) and call.func.id in src.local_names:
        return None                                  # an inner function
    obj = src.resolve(call.func)
    if obj in CASTS or _numba_cast(obj):
        return "cast"
    return "pure" if obj in MATH_FUNCTIONS or obj is len else None


def _numba_cast(obj):
    """numba.float32 and friends used as a cast."""
    name = getattr(obj, "name", None)
    if type(obj).__module__.startswith("numba.core.types") and name in ("float32", "float64", "int32", "int64"):
        return {"float32": F32, "float64": F64}.get(name, INT)
    return None


# ----------------------------------------------------------------------------- the walk

@dataclass
class Param:
    name: str
    type: object        # Arr or a scalar type code


@dataclass
class Function:
    """A translated kernel or device function."""
    name: str
    params: list[Param]
    returns: object = None
    lines: list[str] = field(default_factory=list)
    stores: set = field(default_factory=set)     # arrays it stores into with a plain store
    block_level: bool = False                    # uses block-shared arrays or barriers
    alias_pairs: set = field(default_factory=set)   # arrays a name may stand for (`d = a if c else b`)
    dynamic_local_index: tuple | None = None     # (file, line) of a store into a local array at a run-time index


class Target:
    """What a target system provides; each method returns source text."""
    name = "target"
    # numba math name -> the target's spelling, or a template over {0}, {1}
    math: dict = {}

    def literal(self, value, t) -> str: raise NotImplementedError
    def cast(self, code: str, src, dst) -> str: raise NotImplementedError
    def kernel_header(self, fn: Function, launch: "LaunchInfo") -> list[str]: raise NotImplementedError
    def func_header(self, fn: Function) -> list[str]: raise NotImplementedError
    def thread_index(self, dim: int) -> str: raise NotImplementedError
    def load(self, arr: str, index: list[str], t: Arr) -> str: raise NotImplementedError
    def store(self, arr: str, index: list[str], value: str, t: Arr) -> str: raise NotImplementedError
    def augmented_store(self, arr: str, index: list[str], op: str, value: str) -> str | None:
        """`a[i] += v` / `-=` (both systems differentiate them as atomic adds); None: write it out."""
        return f"{arr}[{', '.join(index)}] {op}= {value}" if op in ("+", "-") else None

    def shape(self, arr: str, k: int) -> str: return f"{arr}.shape[{k}]"
    def select(self, cond: str, a: str, b: str) -> str: raise NotImplementedError
    def atomic(self, op: str, arr: str, index: list[str], value: str, t: Arr) -> str:
        raise NotImplementedError     # returns the old value, typed t.elem
    def pow(self, a: str, b: str) -> str: return f"({a} ** {b})"
    def min_max(self, name: str, a: str, b: str) -> str: raise NotImplementedError
    def kernel_return(self) -> str | None: return "return"
    def body_depth(self, kernel: bool) -> int: return 1
    def return_tuple(self, codes: list[str]) -> str: return "return " + ", ".join(codes)
    def variable_int(self, code: str) -> str: return code
    def variable_bool(self, code: str) -> str: return code
    def wrap_index(self, code: str, extent: str) -> str:
        raise NotImplementedError   # numba wraps a negative index around its dimension's extent
    def shared_array(self, name: str, shape: tuple, elem: str) -> str:
        raise NotImplementedError   # a block-shared array, or the system's refusal
    def barrier(self) -> str: raise NotImplementedError
    def local_array(self, name: str, shape: tuple, elem: str) -> str:
        raise NotImplementedError   # a thread's own array, zero-filled (numba leaves it undefined)
    def stepped_range(self, var: str, parts: list[str]) -> list[str] | None:
        return None                 # range(start, stop, step) as is; else the loop's header lines
    system = "target"          # the key of harness/adapters/limits.py
    block_level = False        # has block-shared arrays and a barrier the adapter maps to
    hoist_locals = False
    single_return = False    # a function returns once, at its end (Taichi: no return inside a non-static if)
    def declare(self, name: str, t) -> str | None: return None
    def module_header(self) -> list[str]: raise NotImplementedError


@dataclass(frozen=True)
class LaunchInfo:
    threads: tuple[int, ...]   # threads per dimension (grid * block)
    block: tuple[int, ...]
    grid: tuple[int, ...]


BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
BIT_OPS = ("&", "|", "^", "<<", ">>")      # on integers, spelled alike in Warp and Taichi (int32, Python's results)
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class Translator:
    """One module: a kernel and the device functions it calls, specialized to argument types."""

    def __init__(self, target: Target, kernel, params: list[Param], launch: LaunchInfo):
        self.target = target
        self.src = Source.of(kernel)
        self.launch = launch
        self.functions: list[Function] = []
        self._specialized: dict[tuple, Function] = {}
        names = self.src.params
        if len(names) != len(params):
            raise self.src.refuse(self.src.tree, f"{self.src.name} takes {len(names)} parameters, "
                                                 f"the launch passes {len(params)}")
        self.store_mask = False
        self.kernel = self._translate(self.src, [Param(n, p.type) for n, p in zip(names, params)], kernel=True)
        self.kernel.dynamic_local_index = next((f.dynamic_local_index for f in self.functions
                                                if f.dynamic_local_index is not None), None)
        self.mask_kernel = None

    def add_store_mask_kernel(self) -> Function:
        """A twin of the kernel that also sets `_stored_<a>[idx] = 1` wherever it stores `a[idx] = v`
        (a plain store, not an atomic or `+=`): the elements whose incoming tangent a store replaces."""
        self.store_mask = True
        src = Source.of(self.src.fn)
        params = list(self.kernel.params)
        masks = [Param(f"_stored_{p.name}", Arr("i32", p.type.ndim)) for p in params if isinstance(p.type, Arr)]
        self.mask_kernel = self._translate(src, params + masks, kernel=True, name=f"{src.name}__stores")
        self.store_mask = False
        return self.mask_kernel

    def module_text(self, doc: str) -> str:
        out = ['"""' + doc + '"""'] + self.target.module_header() + [""]
        for fn in self.functions:
            out += [""] + fn.lines
        return "\n".join(out) + "\n"

    # -------------------------------------------------------------- per function
    def _translate(self, src: Source, params: list[Param], kernel: bool, name: str | None = None,
                   local_functions: dict | None = None) -> Function:
        fn = Function(name or (src.name if kernel else f"{src.name}_" + "_".join(_tname(p.type) for p in params)),
                      params)
        if kernel and self.target.kernel_return() is None:
            src.tree.body = lift_early_returns(src.tree.body)
        if not kernel and self.target.single_return:
            src.tree.body = single_exit(src, src.tree.body)
        # what Python evaluates lazily and the systems would evaluate eagerly becomes a branch
        src.tree.body = lower_lazy(src.tree.body, functools.partial(call_kind, src))
        scope = _Scope(self, src, fn, kernel, local_functions or {})
        scope.infer()
        fn.returns = scope.returns
        fn.lines = (self.target.kernel_header(fn, self.launch) if kernel else self.target.func_header(fn))
        fn.lines += scope.emit_body()
        self.functions.append(fn)
        return fn

    def helper(self, src_node, obj, arg_types: list) -> Function:
        fn = python_function(obj)
        key = (id(fn), tuple(arg_types))
        if key not in self._specialized:
            src = Source.of(obj)
            if len(src.params) != len(arg_types):
                raise self.src.refuse(src_node, f"{src.name} takes {len(src.params)} arguments, given {len(arg_types)}")
            self._specialized[key] = None            # recursion guard
            self._specialized[key] = self._translate(src, [Param(n, t) for n, t in zip(src.params, arg_types)], False)
        made = self._specialized[key]
        if made is None:
            raise self.src.refuse(src_node, f"recursive device function {fn.__name__}")
        return made

    def inner_helper(self, src_node, inner: "InnerFunction", arg_types: list, local_functions: dict) -> Function:
        """The device function an inner function is lifted to, specialized to its arguments' types
        (its own, then the values it reads from the enclosing body)."""
        key = ("inner", inner.name, inner.line, tuple(arg_types))
        if key not in self._specialized:
            self._specialized[key] = None            # recursion guard
            src = inner.lifted()
            self._specialized[key] = self._translate(src, [Param(n, t) for n, t in zip(src.params, arg_types)],
                                                     False, local_functions=local_functions)
        made = self._specialized[key]
        if made is None:
            raise self.src.refuse(src_node, f"recursive inner function {inner.fdef.name}")
        return made


def _reads(node) -> set[str]:
    """The names a statement reads, leaving out a `for` loop's reads of its own counter, which the
    loop binds first (so a counter reused by a later loop is not declared before the first one)."""
    if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
        inner = set().union(*[_reads(s) for s in node.body + node.orelse]) - {node.target.id}
        return inner | _reads(node.iter)
    found = {n.id for n in ast.iter_child_nodes(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.Name):
            found |= _reads(child)
    return found


def _tname(t) -> str:
    if isinstance(t, Arr):
        return f"a{t.ndim}{t.dtype}"
    return str(t)


def _element_type(name: str | None) -> str | None:
    """A shared array's element type code from the numpy dtype name the front end read."""
    try:
        return dtype_code(np.dtype(name)) if name else None
    except (TypeError, ValueError, UnsupportedError):
        return None


@dataclass(frozen=True)
class InnerFunction:
    """A `def` inside a kernel or device function body, lifted to a device function of its own.

    numba.cuda inlines an inner function at each call, its free names reading the defining body's
    variables as they are at the call (Python's late binding). The lifted function takes each such
    name as an extra parameter after its own, and each call passes the name's current value: the
    same values, read at the same moment. Names the defining body does not bind are the module's
    globals, as for any device function."""
    fdef: ast.FunctionDef
    outer: Source
    captured: tuple[str, ...]        # names of the defining body it (or one it calls) reads at a call
    defaults: tuple = ()             # values of the trailing parameters' defaults

    @property
    def name(self) -> str:
        return f"{self.outer.name}__{self.fdef.name}"

    @property
    def line(self) -> int:
        return self.fdef.lineno

    def lifted(self) -> Source:
        fdef = ast.copy_location(ast.FunctionDef(
            self.name, ast.arguments(posonlyargs=[], args=self.fdef.args.args + [ast.arg(n) for n in self.captured],
                                     kwonlyargs=[], kw_defaults=[], defaults=[]),
            list(self.fdef.body), [], None), self.fdef)
        fdef.type_params = []
        hidden = self.outer.local_names - set(self.captured)
        globals_ = {k: v for k, v in self.outer.globals.items() if k not in hidden}
        return Source(None, KernelSource(self.name, self.outer.file, fdef, globals_, self.fdef))


class _Scope:
    """Type inference and emission for one function body."""

    def __init__(self, tr: Translator, src: Source, fn: Function, kernel: bool, local_functions: dict):
        self.tr, self.src, self.fn, self.kernel = tr, src, fn, kernel
        # inner functions callable here: those of enclosing bodies, then this body's own `def`s as
        # the walk meets them (a `def` inside a block is callable inside that block only)
        self.enclosing_functions = dict(local_functions)
        self.local_functions: dict[str, InnerFunction] = {}
        self.block_defined: dict[str, int] = {}   # name -> line of a `def` in a block already left
        self.t = tr.target
        self.vars: dict[str, object] = {p.name: p.type for p in fn.params}
        self.params = {p.name for p in fn.params}
        self.returns = None
        self.emitting = False
        self.declared: set[str] = set(self.params)
        self.loop_vars: set[str] = set()
        # integer variables that may hold a negative value (an index from one is wrapped as numba does)
        self.signed: set[str] = {p.name for p in fn.params if not isinstance(p.type, Arr)}
        self.shared: dict[str, tuple] = {}        # block-shared arrays: name -> shape
        self.local_arrays: dict[str, tuple] = {}  # the thread's own arrays (cuda.local.array): name -> shape
        self.aliases: dict[str, tuple] = {}       # d = a if c else b: d -> (flag naming c's value, a, b)

    # -------------------------------------------------------------- inference
    def infer(self):
        for _ in range(6):                  # a fixed point over variable types (loops may widen them)
            before = (dict(self.vars), set(self.signed))
            self.local_functions, self.block_defined = dict(self.enclosing_functions), {}
            self._block(self.src.tree.body, out=None, depth=0)
            if before == (self.vars, self.signed):
                return
        raise self.src.refuse(self.src.tree, "variable types do not settle")

    def emit_body(self) -> list[str]:
        self.emitting = True
        out: list[str] = []
        depth = self.t.body_depth(self.kernel)
        self.visible = [set(self.params)]
        self.local_functions, self.block_defined = dict(self.enclosing_functions), {}
        self._block(self.src.tree.body, out, depth=depth)
        if not out:
            out.append("    " * depth + "pass")
        return out

    def _assign_var(self, node, name: str, t):
        if name in self.params and not self.emitting and self.vars[name] != t and isinstance(self.vars[name], Arr):
            raise self.src.refuse(node, f"parameter {name} is rebound")
        old = self.vars.get(name)
        try:
            self.vars[name] = unify(old, t) if not isinstance(t, (Arr, Tup)) else t
        except TypeError:
            raise self.src.refuse(node, f"{name} holds values of types {old} and {t}") from None

    # -------------------------------------------------------------- statements
    def _block(self, stmts, out, depth):
        stmts = self._without_loop_else(stmts)
        if out is not None and self.t.hoist_locals:
            self.visible.append(set())
        functions = dict(self.local_functions)
        for k, s in enumerate(stmts):
            if out is not None and self.t.hoist_locals and isinstance(s, (ast.If, ast.For, ast.While)):
                self._declare_before(s, stmts[k + 1:], out, depth)
            self._stmt(s, out, depth)
        if depth != self._top_depth:
            # a function (re)defined in this block: which body a later call runs depends on the path
            defined = {name: inner.line for name, inner in self.local_functions.items() if functions.get(name) is not inner}
            self.local_functions = {n: f for n, f in functions.items() if n not in defined}
            self.block_defined.update(defined)
        if out is not None and self.t.hoist_locals:
            self.visible.pop()

    @property
    def _top_depth(self) -> int:
        return self.t.body_depth(self.kernel) if self.emitting else 0

    def _without_loop_else(self, stmts) -> list:
        """Loops with an else block as the front end's plain form (harness/engine/frontend/loop_else.py);
        the flag is named after the loop's position, so every pass of the walk names it alike."""
        out = []
        for s in stmts:
            if isinstance(s, (ast.For, ast.While)) and s.orelse:
                flag = f"_loop{s.lineno}_{s.col_offset}_broke"
                out += self._without_loop_else(loop_else.without_else(s, lambda: flag))
            else:
                out.append(s)
        return out

    def _declare_before(self, s, rest, out, depth):
        """A variable first assigned inside `s` and read after it is declared just before `s`, as a
        port to a system with block-scoped variables (Taichi) would write it."""
        seen = set().union(*self.visible)
        assigned = [n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        read = set().union(*[_reads(r) for r in rest])
        if isinstance(s, (ast.For, ast.While)):
            read |= _carried_from_ifs(s.body)    # read by a later iteration: declared before the loop
        for name in dict.fromkeys(assigned):
            t = self.vars.get(name)
            if name in seen or name not in read or t not in (F32, F64, INT, BOOL):
                continue
            zero = self.t.literal(0, INT) if t in (INT, BOOL) else self.t.literal(0.0, t)
            self._line(out, depth, f"{name} = {zero}")
            self.visible[-1].add(name)

    def _line(self, out, depth, text):
        if out is not None:
            out.append("    " * depth + text)

    def _stmt(self, s, out, depth):
        src = self.src
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            return                                           # docstring
        if isinstance(s, ast.Pass):
            self._line(out, depth, "pass")
        elif isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise src.refuse(s, "chained assignment")
            self._assign(s, s.targets[0], s.value, out, depth)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self._assign(s, s.target, s.value, out, depth)
        elif isinstance(s, ast.AugAssign):
            self._augassign(s, out, depth)
        elif isinstance(s, ast.If):
            cond = self._cond(s.test)
            self._line(out, depth, f"if {cond}:")
            self._block(s.body, out, depth + 1)
            if s.orelse:
                self._line(out, depth, "else:")
                self._block(s.orelse, out, depth + 1)
        elif isinstance(s, ast.For):
            self._for(s, out, depth)
        elif isinstance(s, ast.While):
            if s.orelse:
                raise src.refuse(s, "while ... else")
            if _polls_atomics(s):
                raise src.lacks(s, "spin_wait", self.t.system, "a loop waiting on an atomic other threads update")
            self._line(out, depth, f"while {self._cond(s.test)}:")
            self._block(s.body, out, depth + 1)
        elif isinstance(s, ast.Break):
            self._line(out, depth, "break")
        elif isinstance(s, ast.Continue):
            self._line(out, depth, "continue")
        elif isinstance(s, ast.Return):
            self._return(s, out, depth)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            code, _ = self._call(s.value, statement=True)
            self._line(out, depth, code)
        elif isinstance(s, ast.FunctionDef):
            self._define(s)
        else:
            raise src.refuse(s, f"statement {type(s).__name__} is outside the adapters' subset")

    def _define(self, s: ast.FunctionDef):
        """Record an inner function (InnerFunction); nothing is emitted until a call."""
        a = s.args
        if s.decorator_list:
            raise self.src.refuse(s, f"inner function {s.name} is decorated: numba.cuda compiles an inner "
                                     "function only as a plain `def`")
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.src.refuse(s, f"inner function {s.name} takes *args, **kwargs or keyword-only parameters")
        for n in ast.walk(s):
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                raise self.src.refuse(n, f"`{type(n).__name__.lower()}` in inner function {s.name}")
        if s.name in self.vars:
            raise self.src.refuse(s, f"inner function {s.name} reuses the name of a variable")
        defaults = tuple(constant_value(d, self.src.globals, self.src.local_names) for d in a.defaults)
        if any(d is None for d in defaults):
            raise self.src.refuse(s, f"a default value of inner function {s.name} is not a constant expression")
        self.local_functions[s.name] = InnerFunction(s, self.src, (), defaults)
        self.block_defined.pop(s.name, None)

    def _captured(self, fdef: ast.FunctionDef, calling: tuple) -> tuple[str, ...]:
        """The names of this body that `fdef`, or an inner function it calls, reads (at the call:
        which inner functions exist is decided then, as Python binds names late)."""
        own = {x.arg for x in fdef.args.args} | local_names(fdef)
        names = set()
        for n in sorted(free_names(fdef)):
            inner = self.local_functions.get(n)
            if inner is not None:
                if n in calling:
                    raise self.src.refuse(fdef, f"recursive inner function {n}")
                theirs = self._captured(inner.fdef, calling + (n,))
                shadowed = sorted(set(theirs) & own)
                if shadowed:       # the callee reads the defining body's value, which fdef's own name hides
                    raise self.src.refuse(fdef, f"inner function {fdef.name} binds {shadowed[0]}, which inner "
                                                f"function {n} it calls reads from the enclosing body")
                names.update(theirs)
            elif n in self.src.local_names:
                names.add(n)
        return tuple(sorted(names))

    def _inner_call(self, node, inner: InnerFunction):
        name = inner.fdef.name
        inner = dataclasses.replace(inner, captured=self._captured(inner.fdef, (name,)))
        given = list(node.args)
        missing = len(inner.fdef.args.args) - len(given)
        if 0 < missing <= len(inner.defaults):
            given += [ast.copy_location(ast.Constant(v), node) for v in inner.defaults[len(inner.defaults) - missing:]]
        if len(given) != len(inner.fdef.args.args):
            raise self.src.refuse(node, f"inner function {name} takes {len(inner.fdef.args.args)} arguments, "
                                        f"given {len(given)}")
        args = [self._expr(a) for a in given]
        for c in inner.captured:
            if c not in self.vars:
                if self.emitting:
                    raise self.src.refuse(node, f"inner function {name} reads {c}, which is not bound at this call")
                return "0", None
            args.append((c, self.vars[c]))
        if any(ta is None for _, ta in args):
            return "0", None
        if any(isinstance(ta, Tup) for _, ta in args):
            raise self.src.refuse(node, f"a tuple passed to inner function {name} (the adapters pass numbers and arrays)")
        if any(c in self.shared for c in inner.captured):
            raise self.src.refuse(node, f"inner function {name} reads a block-shared array of the kernel "
                                        "(not translated by the adapter yet)")
        self._passed_arrays(node, args)
        fn = self.tr.inner_helper(node, inner, [ta for _, ta in args], self.local_functions)
        if self.tr.store_mask and fn.stores:
            raise self.src.refuse(node, f"{name} stores into an array (the store mask is kernel-level)")
        return f"{fn.name}({', '.join(c for c, _ in args)})", fn.returns

    def _return(self, s, out, depth):
        if self.kernel:
            if s.value is not None:
                raise self.src.refuse(s, "a kernel returns no value")
            ret = self.t.kernel_return()
            if ret is None:
                raise self.src.refuse(s, f"an early return from the kernel ({self.t.name} kernels have one "
                                         "parallel loop over the threads and no early exit from it)")
            self._line(out, depth, ret)
            return
        if s.value is None:
            raise self.src.refuse(s, "a device function must return a value")
        if isinstance(s.value, ast.Tuple):
            codes, types_ = zip(*[self._expr(e) for e in s.value.elts])
            if not self.emitting:
                self.returns = Tup(tuple(types_)) if self.returns is None else \
                    Tup(tuple(unify(a, b) for a, b in zip(self.returns.items, types_)))
                return
            codes = [self.t.cast(c, t, r) for c, t, r in zip(codes, types_, self.returns.items)]
            self._line(out, depth, self.t.return_tuple(codes))
            return
        code, t = self._expr(s.value)
        if not self.emitting:
            self.returns = unify(self.returns, t)
            return
        self._line(out, depth, f"return {self.t.cast(code, t, self.returns)}")

    def _assign(self, s, target, value, out, depth):
        src = self.src
        if isinstance(target, ast.Name):
            if self._shared_call(value):
                self._declare_shared(s, target.id, value, out, depth)
                return
            if isinstance(value, ast.Call) and _cuda_path(self.src, value.func) == "local.array":
                self._declare_local(s, target.id, value, out, depth)
                return
            choice = self._array_choice(value)
            if choice is not None:
                self._bind_alias(s, target.id, value, choice, out, depth)
                return
            if not self._nonneg(value):
                self.signed.add(target.id)
            code, t = self._expr(value)
            if isinstance(t, (Arr, Tup)):
                raise src.refuse(s, f"{target.id} is bound to an array or tuple (local arrays and array "
                                    "aliases are outside the adapters' subset)")
            self._assign_var(s, target.id, t)
            if self.emitting and self.t.hoist_locals:
                self.visible[-1].add(target.id)
            code = self.t.cast(code, t, self.vars[target.id])
            if self.vars[target.id] == INT and code.lstrip("-").isdigit():
                code = self.t.variable_int(code)
            if self.vars[target.id] == BOOL and code in ("True", "False"):
                code = self.t.variable_bool(code)
            self._line(out, depth, f"{target.id} = {code}")
        elif isinstance(target, ast.Tuple) and (not all(isinstance(e, ast.Name) for e in target.elts) or
                                                 self._reads_targets(target, value)):
            self._unpack(s, target, value, out, depth)      # `a, b = b, a`: one assignment at a time would lose a
        elif isinstance(target, ast.Tuple):
            names = [e.id for e in target.elts]
            if self.emitting and self.t.hoist_locals:
                self.visible[-1].update(names)
            items = self._items(value)
            if items is not None:
                if len(items) != len(names):
                    raise src.refuse(s, "tuple assignment of the wrong length")
                nonneg = [self._nonneg(e) for e in value.elts] if isinstance(value, ast.Tuple) else [True] * len(items)
                self.signed.update(n for n, ok in zip(names, nonneg) if not ok)
                pairs = items
                temps = []
                for k, (n, (code, t)) in enumerate(zip(names, pairs)):
                    self._assign_var(s, n, t)
                    temps.append(self.t.cast(code, t, self.vars[n]))
                for n, code in zip(names, temps):
                    self._line(out, depth, f"{n} = {code}")
                return
            code, t = self._expr(value)
            if not isinstance(t, Tup) or len(t.items) != len(names):
                raise src.refuse(s, "tuple assignment from a value that is not a tuple of that length")
            self.signed.update(names)
            for n, it in zip(names, t.items):
                self._assign_var(s, n, it)
                if self.vars[n] != it:
                    raise src.refuse(s, f"{n} takes a tuple element of type {it} but holds {self.vars[n]}")
            self._line(out, depth, f"{', '.join(names)} = {code}")
        elif isinstance(target, ast.Subscript):
            arr, index, at = self._subscript(target)
            code, t = self._expr(value)
            code = self.t.cast(code, t, at.elem)
            if arr in self.aliases:               # the store goes to the array the name stands for
                flag, a, b = self.aliases[arr]
                self._line(out, depth, f"if {flag}:")
                self._store(s, a, index, code, at, out, depth + 1)
                self._line(out, depth, "else:")
                self._store(s, b, index, code, at, out, depth + 1)
            else:
                self._store(s, arr, index, code, at, out, depth)
        else:
            raise src.refuse(s, f"assignment to {type(target).__name__}")

    def _store(self, s, arr, index, code, at, out, depth):
        self._line(out, depth, self.t.store(arr, index, code, at))
        if arr in self.shared or arr in self.local_arrays:
            return
        self.fn.stores.add(arr)
        if self.tr.store_mask:
            if not self.kernel:
                raise self.src.refuse(s, f"a device function stores into array {arr} (the store mask is kernel-level)")
            self._line(out, depth, self.t.store(f"_stored_{arr}", index, "1", Arr("i32", at.ndim)))

    def _array_choice(self, value) -> tuple | None:
        """(condition or None, a, b) for a value naming an array argument (`a`) or choosing one of
        two of the same type (`a if c else b`); None for anything else."""
        def argument(node):
            ok = isinstance(node, ast.Name) and node.id in self.params and isinstance(self.vars.get(node.id), Arr)
            return node.id if ok else None
        if argument(value):
            return None, value.id, value.id
        if isinstance(value, ast.IfExp) and argument(value.body) and argument(value.orelse) \
                and self.vars[value.body.id] == self.vars[value.orelse.id]:
            return value.test, value.body.id, value.orelse.id
        return None

    def _bind_alias(self, s, name: str, value, choice: tuple, out, depth):
        """`d = a if c else b` (ping-pong buffers), d bound once: every access to d goes to a or b as
        c was at the binding (a flag keeps it); the arrays must have one shape (checked at launch)."""
        cond, a, b = choice
        bound = sum(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                    for n in ast.walk(self.src.tree))
        if name in self.params or bound != 1:
            raise self.src.refuse(s, f"{name} is bound to an array argument and bound again (the adapter follows "
                                     "a name bound once to one of two arrays)")
        flag = None
        if cond is not None:
            flag = f"_{name}_is_{a}"
            self._assign(s, ast.copy_location(ast.Name(flag, ast.Store()), s), cond, out, depth)
            self.fn.alias_pairs.add((a, b))
        self.vars[name] = self.vars[a]
        self.aliases[name] = (flag, a, b)

    @staticmethod
    def _reads_targets(target: ast.Tuple, value) -> bool:
        """Whether a tuple display's later items read a name an earlier target binds."""
        if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts):
            return False
        bound = set()
        for elt, item in zip(target.elts, value.elts):
            if any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(item)):
                return True
            bound.add(elt.id)
        return False

    def _passed_arrays(self, node, args):
        """Arrays passed to a function must be array arguments (a function's array parameter is one)."""
        for code, ta in args:
            if isinstance(ta, Arr) and (code in self.local_arrays or code in self.aliases):
                raise self.src.refuse(node, f"{code}, a local array or a name for an array argument, passed to a "
                                            "function (not translated by the adapter yet)")

    def _unpack(self, s, target: ast.Tuple, value, out, depth):
        """`a[i], (p, q) = v` with targets other than names, as Python runs it: every value first
        (into temporaries named after the statement's position, so each pass of the walk names
        them alike), then each target in turn."""
        temps = []
        for k, (elt, item) in enumerate(self._pairs(s, target, value, out, depth)):
            name = f"_unpack{s.lineno}_{s.col_offset}_{k}"
            self._assign(s, ast.copy_location(ast.Name(name, ast.Store()), s), item, out, depth)
            temps.append((elt, name))
        for elt, name in temps:
            self._assign(s, elt, ast.copy_location(ast.Name(name, ast.Load()), s), out, depth)

    def _pairs(self, s, target, value, out, depth) -> list:
        """(target, value) pairs of a tuple assignment, nested tuples on both sides matched up; a
        value that is not a tuple display (a device function's tuple) is split by a names-only unpack."""
        if not isinstance(target, ast.Tuple):
            return [(target, value)]
        if isinstance(value, ast.Tuple):
            if len(value.elts) != len(target.elts):
                raise self.src.refuse(s, "tuple assignment of the wrong length")
            return [p for t, v in zip(target.elts, value.elts) for p in self._pairs(s, t, v, out, depth)]
        parts = [ast.copy_location(ast.Name(f"_unpack{s.lineno}_{s.col_offset}_part{k}", ast.Store()), s)
                 for k in range(len(target.elts))]
        self._assign(s, ast.copy_location(ast.Tuple(parts, ast.Store()), s), value, out, depth)
        return [p for t, n in zip(target.elts, parts)
                for p in self._pairs(s, t, ast.copy_location(ast.Name(n.id, ast.Load()), s), out, depth)]

    def _augassign(self, s, out, depth):
        op = BINOPS.get(type(s.op))
        if op is None:
            raise self.src.refuse(s, f"augmented assignment {type(s.op).__name__}")
        if isinstance(s.target, ast.Name):
            new = ast.copy_location(ast.BinOp(left=ast.Name(s.target.id, ast.Load()), op=s.op, right=s.value), s)
            self._assign(s, s.target, new, out, depth)
            return
        if isinstance(s.target, ast.Subscript):
            arr, index, at = self._subscript(s.target)
            code, t = self._expr(s.value)
            # on a local array too: Warp differentiates `v[i] += x` exactly, its `v[i] = v[i] + x` is another matter
            special = self.t.augmented_store(arr, index, op, self.t.cast(code, t, at.elem)) \
                if at.dtype in FLOATS and arr not in self.aliases else None
            if special is not None:
                self._line(out, depth, special)
                return
            load = ast.copy_location(ast.Subscript(value=s.target.value, slice=s.target.slice, ctx=ast.Load()), s)
            new = ast.copy_location(ast.BinOp(left=load, op=s.op, right=s.value), s)
            self._assign(s, s.target, new, out, depth)
            return
        raise self.src.refuse(s, "augmented assignment to this target")

    def _for(self, s, out, depth):
        src = self.src
        if s.orelse:
            raise src.refuse(s, "for ... else")
        if not isinstance(s.target, ast.Name):
            raise src.refuse(s, "a for loop over something other than one name")
        it = s.iter
        if isinstance(it, (ast.Tuple, ast.List)):
            return self._unrolled(s, out, depth)
        if not (isinstance(it, ast.Call) and src.resolve(it.func) is range and 1 <= len(it.args) <= 3):
            raise src.refuse(s, "a for loop over something other than range(...)")
        parts = []
        for a in it.args:
            code, t = self._expr(a)
            if t != INT:
                raise src.refuse(s, "range() over a non-integer")
            parts.append(code)
        self._assign_var(s, s.target.id, INT)
        start_ok = len(it.args) == 1 or self._nonneg(it.args[0])
        step_ok = len(it.args) < 3 or self._nonneg(it.args[2])      # a step is never 0: > 0 here
        if not (start_ok and step_ok):
            self.signed.add(s.target.id)
        self.loop_vars.add(s.target.id)
        if self.emitting and self.t.hoist_locals:
            self.visible[-1].add(s.target.id)
        header = self.t.stepped_range(s.target.id, parts) if len(parts) == 3 else None
        if header is None:
            self._line(out, depth, f"for {s.target.id} in range({', '.join(parts)}):")
        else:
            for line in header:
                self._line(out, depth + (line != header[0]), line)
        self._block(s.body, out, depth + 1)

    def _unrolled(self, s, out, depth):
        """`for d in (16, 8, 4)`: the body once per item, the name bound to it first (as numba.cuda,
        which unrolls a loop over a tuple, and the bundled engine do)."""
        if any(isinstance(n, (ast.Break, ast.Continue)) for b in s.body for n in ast.walk(b)):
            raise self.src.refuse(s, "break or continue in a loop over a tuple (the adapter unrolls it)")
        for item in s.iter.elts:
            self._assign(s, s.target, item, out, depth)
            self._block(s.body, out, depth)

    # -------------------------------------------------------------- expressions
    def _cond(self, node) -> str:
        code, t = self._expr(node)
        if t == BOOL:
            return code
        if t == INT:
            return f"({code} != {self.t.literal(0, INT)})"
        return f"({code} != {self.t.literal(0.0, t)})"

    def _subscript(self, node):
        src = self.src
        if isinstance(node.value, ast.Call):
            raise src.refuse(node, "an element of a call's tuple result where the translator cannot name the "
                                   "elements first (a branch of a conditional expression, an operand of and/or, a "
                                   "while test, or beside another call of the module's functions; "
                                   "harness/engine/frontend/tuple_elements.py)")
        if not isinstance(node.value, ast.Name) or not isinstance(self.vars.get(node.value.id), Arr):
            raise src.refuse(node, "indexing something other than an array parameter")
        at = self.vars[node.value.id]
        idx = node.slice
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        if len(elts) != at.ndim:
            raise src.refuse(node, f"{node.value.id} has {at.ndim} dimension(s), indexed with {len(elts)}")
        index = self._indices(node, node.value.id, elts)
        if isinstance(node.ctx, ast.Store) and node.value.id in self.local_arrays and self.fn.dynamic_local_index is None \
                and not all(isinstance(e, ast.Constant) for e in elts):
            self.fn.dynamic_local_index = (self.src.file, node.lineno)
        return node.value.id, index, at

    def _indices(self, node, arr: str, elts) -> list[str]:
        """Index codes; one that may be negative wraps around its extent, as numba does
        (`im[x - 1]` at x = 0 reads the last row; Warp and Taichi would read out of bounds)."""
        codes = []
        for k, e in enumerate(elts):
            if isinstance(e, ast.Slice):
                raise self.src.refuse(node, "array slices")
            code, t = self._expr(e)
            if t != INT:
                raise self.src.refuse(node, f"index of type {t}")
            codes.append(code if self._nonneg(e) else self.t.wrap_index(code, self._extent(arr, k)))
        return codes

    def _extent(self, arr: str, k: int) -> str:
        if arr in self.shared:
            return self.t.literal(self.shared[arr][k], INT)
        if arr in self.local_arrays:
            return self.t.literal(self.local_arrays[arr][k], INT)
        if arr in self.aliases:                   # its arrays have one shape (checked at launch)
            return self.t.shape(self.aliases[arr][1], k)
        return self.t.shape(arr, k)

    def _nonneg(self, node) -> bool:
        """Whether an integer expression is provably >= 0 (then its index needs no wrap)."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int) and node.value >= 0
        if isinstance(node, ast.Name):
            if node.id in self.vars:
                return node.id not in self.signed
            obj = self.src.resolve(node)
            return isinstance(obj, int) and obj >= 0
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow)):
            return self._nonneg(node.left) and self._nonneg(node.right)
        if isinstance(node, ast.IfExp):
            return self._nonneg(node.body) and self._nonneg(node.orelse)
        if isinstance(node, ast.Attribute):
            path = _cuda_path(self.src, node)
            return bool(path) and path.split(".")[0] in ("threadIdx", "blockIdx", "blockDim", "gridDim",
                                                         "warpsize", "laneid") or node.attr in ("size", "ndim")
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            return node.value.attr == "shape"
        if isinstance(node, ast.Subscript) and self._array_name(node.value):
            return self.vars[node.value.id].dtype[0] == "u"          # an element of an unsigned array
        if isinstance(node, ast.Call):
            path = _cuda_path(self.src, node.func)
            if path in ("grid", "gridsize"):
                return True
            obj = self.src.resolve(node.func)
            if obj in (len, abs):
                return True
            if obj is min:
                return all(self._nonneg(a) for a in node.args)
            if obj is max:
                return any(self._nonneg(a) for a in node.args)
        return False

    def _array_name(self, node) -> str | None:
        if isinstance(node, ast.Name) and isinstance(self.vars.get(node.id), Arr):
            return node.id
        return None

    def _shape_items(self, node) -> list | None:
        """`a.shape` as one (code, INT) per dimension."""
        if isinstance(node, ast.Attribute) and node.attr == "shape" and self._array_name(node.value):
            arr = node.value.id
            return [(self._extent(arr, k), INT) for k in range(self.vars[arr].ndim)]
        return None

    def _items(self, node) -> list | None:
        """A tuple-valued expression as its items' (code, type): a tuple display, `a.shape`,
        `cuda.grid(n)` and `cuda.gridsize(n)` with n > 1; None for anything else."""
        if isinstance(node, ast.Tuple):
            return [self._expr(e) for e in node.elts]
        shape = self._shape_items(node)
        if shape is not None:
            return shape
        if isinstance(node, ast.Call) and _cuda_path(self.src, node.func) in ("grid", "gridsize"):
            n = self._dimensions(node)
            if n > 1:
                return [self._launch_extent(node, k) for k in range(n)]
        return None

    def _expr(self, node):
        src = self.src
        t = self.t
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return ("True" if v else "False"), BOOL
            if isinstance(v, int):
                return t.literal(v, INT), INT
            if isinstance(v, float):
                return t.literal(v, F64), F64
            raise src.refuse(node, f"constant {v!r}")
        if isinstance(node, ast.Name):
            if node.id in self.vars:
                return node.id, self.vars[node.id]
            obj = src.resolve(node)
            if isinstance(obj, (int, float)) and not isinstance(obj, bool):
                return self._expr(ast.copy_location(ast.Constant(obj), node))
            if not self.emitting and node.id not in self.vars:
                return node.id, None              # assigned later in a loop; the fixed point fills it in
            raise src.refuse(node, f"name {node.id} (a global that is not a number)")
        if isinstance(node, ast.BinOp):
            op = BINOPS.get(type(node.op))
            if op is None:
                raise src.refuse(node, f"operator {type(node.op).__name__}")
            a, ta = self._expr(node.left)
            b, tb = self._expr(node.right)
            return self._binop(node, op, a, ta, b, tb)
        if isinstance(node, ast.UnaryOp):
            a, ta = self._expr(node.operand)
            if isinstance(node.op, ast.USub):
                return f"(-{a})", ta
            if isinstance(node.op, ast.UAdd):
                return a, ta
            if isinstance(node.op, ast.Invert) and ta in (INT, None):
                return f"(~{a})", ta
            if isinstance(node.op, ast.Not):
                return f"(not {self._cond(node.operand)})", BOOL
            raise src.refuse(node, f"operator {type(node.op).__name__}")
        if isinstance(node, ast.BoolOp):
            if not eager_logic(node, functools.partial(call_kind, src)):       # lower_lazy left it: a gap of ours
                raise src.refuse(node, f"a logical operator (`{ast.unparse(node)}`) the translator could not make a "
                                       "branch: both systems evaluate every operand")
            word = " and " if isinstance(node.op, ast.And) else " or "
            return "(" + word.join(self._cond(v) for v in node.values) + ")", BOOL
        if isinstance(node, ast.Compare):
            parts = []
            left, tl = self._expr(node.left)
            for op, right in zip(node.ops, node.comparators):
                sym = _CMPOPS.get(type(op))
                if sym is None:
                    raise src.refuse(node, f"comparison {type(op).__name__}")
                r, tr = self._expr(right)
                u = unify(tl, tr) if tl is not None and tr is not None else (tl or tr)
                parts.append(f"({t.cast(left, tl, u)} {sym} {t.cast(r, tr, u)})")
                left, tl = r, tr
            return (parts[0] if len(parts) == 1 else "(" + " and ".join(parts) + ")"), BOOL
        if isinstance(node, ast.IfExp):
            if not eager_choice(node, functools.partial(call_kind, src)):   # lower_lazy left it: a gap of ours
                raise src.refuse(node, f"a conditional expression (`{ast.unparse(node)}`) the translator could not "
                                       "make a branch: both systems evaluate both sides of a select")
            c = self._cond(node.test)
            a, ta = self._expr(node.body)
            b, tb = self._expr(node.orelse)
            u = unify(ta, tb)
            return t.select(c, t.cast(a, ta, u), t.cast(b, tb, u)), u
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                items = self._shape_items(node.value)
                k = node.slice.value if isinstance(node.slice, ast.Constant) else None
                if items is not None and isinstance(k, int) and -len(items) <= k < len(items):
                    return items[k]
                raise src.refuse(node, "a shape lookup other than array.shape[constant]")
            arr, index, at = self._subscript(node)
            if arr in self.aliases:
                flag, a, b = self.aliases[arr]
                code = t.load(a, index, at) if flag is None else t.select(flag, t.load(a, index, at), t.load(b, index, at))
                return code, at.elem
            return t.load(arr, index, at), at.elem
        if isinstance(node, ast.Attribute):
            path = _cuda_path(src, node)
            if path:
                return self._cuda_attribute(node, path)
            if isinstance(node.value, ast.Name) and node.value.id not in self.vars:
                value = src.resolve(node)        # a module's number: math.pi, math.inf, np.e, cfg.TPB
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return self._expr(ast.copy_location(ast.Constant(value), node))
            arr = self._array_name(node.value)
            if arr and node.attr == "size":
                return "(" + " * ".join(self._extent(arr, k) for k in range(self.vars[arr].ndim)) + ")", INT
            if arr and node.attr == "ndim":
                return t.literal(self.vars[arr].ndim, INT), INT
            if arr and node.attr == "shape":
                items = self._shape_items(node)
                return "(" + ", ".join(c for c, _ in items) + ",)", Tup(tuple(tt for _, tt in items))
            raise src.refuse(node, f"attribute .{node.attr}")
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Tuple):
            pairs = [self._expr(e) for e in node.elts]
            return "(" + ", ".join(c for c, _ in pairs) + ",)", Tup(tuple(tt for _, tt in pairs))
        raise src.refuse(node, f"expression {type(node).__name__} is outside the adapters' subset")

    def _binop(self, node, op, a, ta, b, tb):
        t = self.t
        if ta is None or tb is None:
            return f"({a} {op} {b})", (ta or tb)
        if isinstance(ta, (Arr, Tup)) or isinstance(tb, (Arr, Tup)):
            raise self.src.refuse(node, "arithmetic on arrays or tuples")
        if ta == BOOL or tb == BOOL:
            raise self.src.refuse(node, "arithmetic on booleans")
        if op in BIT_OPS:
            if ta != INT or tb != INT:
                raise self.src.refuse(node, f"bitwise {op} of a float")
            return f"({a} {op} {b})", INT
        if op == "/":
            u = unify(unify(ta, tb), F64) if INT in (ta, tb) and F32 not in (ta, tb) else unify(ta, tb)
            if u == INT:
                u = F64
            return f"({t.cast(a, ta, u)} / {t.cast(b, tb, u)})", u
        if op == "**":
            u = unify(ta, tb)
            if u == INT:
                raise self.src.refuse(node, "integer powers")
            if INT in (ta, tb):
                u = F64
            return t.pow(t.cast(a, ta, u), t.cast(b, tb, u)), u
        u = unify(ta, tb)
        if op in ("//", "%") and u != INT:
            raise self.src.refuse(node, f"float {op}")
        return f"({t.cast(a, ta, u)} {op} {t.cast(b, tb, u)})", u

    def _dimensions(self, node) -> int:
        """n of cuda.grid(n) / cuda.gridsize(n), which must be the launch's dimensionality."""
        arg = node.args[0] if len(node.args) == 1 else None
        n = self.src.resolve(arg) if isinstance(arg, ast.Name) else getattr(arg, "value", None)
        if not isinstance(n, int) or isinstance(n, bool):
            raise self.src.refuse(node, "cuda.grid(n) with a non-constant n")
        if n != len(self.tr.launch.threads):
            raise self.src.refuse(node, f"cuda.grid({n}) in a {len(self.tr.launch.threads)}-D launch")
        return n

    def _launch_extent(self, node, k: int):
        """Component k of cuda.grid (the thread's index) or cuda.gridsize (the launch's threads)."""
        if _cuda_path(self.src, node.func) == "grid":
            return self.t.thread_index(k), INT
        return self.t.literal(self.tr.launch.threads[k], INT), INT

    # -------------------------------------------------------------- block-shared arrays
    def _shared_call(self, value) -> bool:
        return isinstance(value, ast.Call) and _cuda_path(self.src, value.func) == "shared.array"

    def _declare_shared(self, s, name: str, call, out, depth):
        t = self.t
        if not t.block_level:
            raise self.src.lacks(s, "shared", t.system, "cuda.shared.array")
        if len(self.tr.launch.threads) != 1:
            raise self.src.refuse(s, "cuda.shared.array in a multi-dimensional launch (the adapter maps blocks "
                                     "of 1-D launches only)")
        # the front end's normal form: cuda.shared.array(SHAPE, 'dtype'), constants folded
        shape = constant(self.src.kernel, call.args[0]) if len(call.args) == 2 and not call.keywords else None
        shape = (shape,) if isinstance(shape, int) else shape
        if not (isinstance(shape, tuple) and shape and all(isinstance(n, int) and n > 0 for n in shape)):
            raise self.src.refuse(s, "a shared array's shape must be a constant or a tuple of constants")
        name_of_dtype = dtype(self.src.kernel, call.args[1])
        elem = _element_type(name_of_dtype)
        if elem is None:
            raise self.src.refuse(s, f"a shared array of dtype {ast.unparse(call.args[1])}")
        if name in self.vars and self.vars[name] != Arr(elem, len(shape)):
            raise self.src.refuse(s, f"{name} is rebound")
        self.vars[name] = Arr(elem, len(shape))
        self.shared[name] = shape
        self.fn.block_level = True
        self._line(out, depth, t.shared_array(name, shape, elem))

    def _declare_local(self, s, name: str, call, out, depth):
        """`cuda.local.array(SHAPE, 'dtype')` (the front end's normal form; `cuda.const.array_like` and
        a module array the kernel indexes arrive as one, filled by stores)."""
        shape = constant(self.src.kernel, call.args[0]) if len(call.args) == 2 and not call.keywords else None
        shape = (shape,) if isinstance(shape, int) else shape
        if not (isinstance(shape, tuple) and shape and all(isinstance(n, int) and n > 0 for n in shape)):
            raise self.src.refuse(s, "a local array's shape must be a constant or a tuple of constants")
        if len(shape) > 2:
            raise self.src.refuse(s, "a local array of more than two dimensions (the adapter maps vectors and matrices)")
        elem = _element_type(dtype(self.src.kernel, call.args[1]))
        if elem is None or elem == BOOL:
            raise self.src.refuse(s, f"a local array of dtype {ast.unparse(call.args[1])}")
        elem = elem if elem in FLOATS else "i32"     # integers compute as int32 (as loads of any width do)
        if name in self.vars and (self.vars[name] != Arr(elem, len(shape)) or name not in self.local_arrays):
            raise self.src.refuse(s, f"{name} is rebound")
        self.vars[name] = Arr(elem, len(shape))
        self.local_arrays[name] = shape
        self._line(out, depth, self.t.local_array(name, shape, elem))

    def _cuda_attribute(self, node, path):
        L = self.tr.launch
        axis = {"x": 0, "y": 1, "z": 2}
        head, _, ax = path.partition(".")
        if head in ("threadIdx", "blockIdx", "blockDim", "gridDim") and ax in axis:
            k = axis[ax]
            if k >= len(L.threads):
                return self.t.literal(0 if head in ("threadIdx", "blockIdx") else 1, INT), INT
            b = self.t.literal(L.block[k], INT)
            if head == "threadIdx":
                return f"({self.t.thread_index(k)} % {b})", INT
            if head == "blockIdx":
                return f"({self.t.thread_index(k)} // {b})", INT
            if head == "blockDim":
                return b, INT
            return self.t.literal(L.grid[k], INT), INT
        if path == "warpsize":
            return self.t.literal(32, INT), INT
        if path == "laneid":                 # the thread's place in its warp: its linear index in the block, mod 32
            linear = None
            for k in reversed(range(len(L.threads))):
                b = self.t.literal(L.block[k], INT)
                within = f"({self.t.thread_index(k)} % {b})"
                linear = within if linear is None else f"({within} + {b} * {linear})"
            return f"({linear} % {self.t.literal(32, INT)})", INT
        raise self.src.refuse(node, f"cuda.{path}")

    def _call(self, node, statement: bool = False):
        src, t = self.src, self.t
        path = _cuda_path(src, node.func)
        if node.keywords:
            raise src.refuse(node, "keyword arguments")
        if path is not None:
            return self._cuda_call(node, path, statement)
        if isinstance(node.func, ast.Name) and node.func.id in self.local_functions:
            return self._inner_call(node, self.local_functions[node.func.id])
        if isinstance(node.func, ast.Name) and node.func.id in self.block_defined:
            raise src.refuse(node, f"inner function {node.func.id} is defined inside a branch or loop "
                                   f"(line {self.block_defined[node.func.id]}): which body a call after it runs "
                                   "depends on the path taken")
        obj = src.resolve(node.func)
        if random_function(obj):                # not xoroshiro128p: the adapters' own refusal (rng_refusal.py)
            raise src.lacks(node, "rng", t.system, f"{random_function(obj)}(...) draws from numba's generator")
        if obj in MATH_FUNCTIONS:
            name = MATH_FUNCTIONS[obj]
            args = [self._expr(a) for a in node.args]
            return self._math(node, name, args)
        if obj in CASTS or _numba_cast(obj):
            dst = CASTS.get(obj) if obj in CASTS else _numba_cast(obj)
            (code, ts), = [self._expr(a) for a in node.args]
            return t.cast(code, ts, dst), dst
        if obj is not None and hasattr(obj, "py_func") or isinstance(obj, pytypes.FunctionType):
            if getattr(obj, "__name__", "") == "autodiff" or "autodiff" in getattr(obj, "__module__", ""):
                raise src.lacks(node, "nested_ad", t.system, "device-side autodiff (nested AD)")
            if rule_for(obj) is not None:       # translated, the call would get the true derivative, not the rule's
                raise src.refuse(node, f"{ast.unparse(node.func)} has a custom derivative rule (harness.partials_of), "
                                       "which the adapter does not translate yet")
            args = [self._expr(a) for a in node.args]
            if any(ta is None for _, ta in args):
                return "0", None
            self._passed_arrays(node, args)
            fn = self.tr.helper(node, obj, [ta for _, ta in args])
            if self.tr.store_mask and fn.stores:
                raise src.refuse(node, f"{fn.name} stores into an array argument (the store mask is kernel-level)")
            codes = [c for c, _ in args]
            return f"{fn.name}({', '.join(codes)})", fn.returns
        raise src.refuse(node, f"call of {ast.unparse(node.func)}")

    def _math(self, node, name, args):
        t = self.t
        types_ = [ta for _, ta in args]
        if any(ta is None for ta in types_):
            return "0", None
        if any(isinstance(ta, (Arr, Tup)) or ta == BOOL for ta in types_):
            raise self.src.refuse(node, f"{name} of a non-number")
        if name in ("min", "max", "abs"):
            u = types_[0]
            for ta in types_[1:]:
                u = unify(u, ta)
            codes = [t.cast(c, ta, u) for c, ta in args]
            if name == "abs":
                return self._math_text(node, "abs", codes, u), u
            out = codes[0]
            for c in codes[1:]:
                out = t.min_max(name, out, c)
            return out, u
        u = None
        for ta in types_[:1] if name == "ldexp" else types_:     # ldexp's type is its mantissa's
            u = unify(u, ta)
        if u == INT:
            u = F64
        codes = [t.cast(c, ta, u) for c, ta in args]
        if name == "trunc":                              # an integer in numba: the cast truncates
            return t.cast(codes[0], u, INT), INT
        if name in ("floor", "ceil"):                    # likewise an integer
            return t.cast(self._math_text(node, name, codes, u), u, INT), INT
        if name == "ldexp":                              # x 2^i: i an integer, the power exact in floats
            codes[1] = t.cast(args[1][0], args[1][1], u)
        text = self._math_text(node, name, codes, u)
        return (text, BOOL) if name in ("isnan", "isinf", "isfinite") else (text, u)

    def _math_text(self, node, name, codes, u):
        spelling = self.t.math.get(name)
        if spelling is None and name in MISSING_MATH.get(self.t.system, ()):
            raise self.src.lacks(node, "math", self.t.system, f"math.{name}")
        if spelling is None:
            raise self.src.refuse(node, f"math.{name} (not translated by the adapter yet)")
        return spelling.format(*codes, **{k: self.t.literal(v, u) for k, v in MATH_CONSTANTS.items()})

    def _cuda_call(self, node, path, statement):
        src, t = self.src, self.t
        if path in ("grid", "gridsize"):
            n = self._dimensions(node)
            items = [self._launch_extent(node, k) for k in range(n)]
            if n == 1:
                return items[0]
            return "(" + ", ".join(c for c, _ in items) + ",)", Tup((INT,) * n)
        if path in ("atomic.add", "atomic.sub", "atomic.max", "atomic.min"):
            arr_node, idx_node, val_node = node.args
            if not isinstance(arr_node, ast.Name) or not isinstance(self.vars.get(arr_node.id), Arr) \
                    or arr_node.id in self.local_arrays or arr_node.id in self.aliases:
                raise src.refuse(node, "an atomic on something other than an array parameter")
            at = self.vars[arr_node.id]
            elts = idx_node.elts if isinstance(idx_node, ast.Tuple) else [idx_node]
            if any(self._expr(e)[1] != INT for e in elts):
                raise src.refuse(node, "an atomic index that is not an integer")
            index = self._indices(node, arr_node.id, elts)
            code, tv = self._expr(val_node)
            return t.atomic(path.split(".")[1], arr_node.id, index, t.cast(code, tv, at.elem), at), at.elem
        if path == "syncthreads":
            if not t.block_level:
                raise src.lacks(node, "shared", t.system, "cuda.syncthreads()")
            if len(self.tr.launch.threads) != 1:
                raise src.refuse(node, "cuda.syncthreads() in a multi-dimensional launch (the adapter maps "
                                       "blocks of 1-D launches only)")
            self.fn.block_level = True
            return t.barrier(), None
        if path == "shared.array":
            raise src.refuse(node, "cuda.shared.array outside an assignment to a name")
        if path in ("local.array", "const.array_like"):
            raise src.refuse(node, f"cuda.{path} outside an assignment to a name (not translated by the adapter yet)")
        if path in ("threadfence", "threadfence_block", "threadfence_system"):
            raise src.lacks(node, "fence", t.system, f"cuda.{path}()")
        if path == "cg.this_grid":
            raise src.lacks(node, "grid_sync", t.system, "cuda.cg.this_grid()")
        if path.startswith("shfl") or path.startswith("vote") or path in ("activemask", "ballot_sync"):
            raise src.lacks(node, "warp_intrinsics", t.system, f"cuda.{path}")
        raise src.refuse(node, f"cuda.{path}")


def lift_early_returns(stmts: list, values: bool = False) -> list:
    """`if c: ...; return` followed by more statements becomes `if c: ... else: <the rest>`, so a
    kernel without early exits says the same thing (Taichi's parallel loop has none). An `if`
    (or `elif` chain) some of whose paths return takes the statements after it into each branch,
    where a branch that returns drops them as unreachable. With `values`, the same for a
    function's `return v`, which then stays at the end of its branch. Returns left inside loops
    stay, and the translator refuses them."""
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, ast.Return) and (values or s.value is None):
            return out + [s] if values else out          # the rest is unreachable
        if isinstance(s, ast.If) and _returns_outside_loops(s, values):
            rest = stmts[k + 1:]
            body = lift_early_returns(s.body + rest, values) or [ast.Pass()]
            orelse = lift_early_returns(s.orelse + rest, values)
            out.append(ast.copy_location(ast.If(test=s.test, body=body, orelse=orelse), s))
            return out
        out.append(s)
    return out


def _returns_outside_loops(s: ast.If, values: bool) -> bool:
    """Whether a path through the `if` returns, other than from inside a loop."""
    def returns(block) -> bool:
        for t in block:
            if isinstance(t, ast.Return) and (values or t.value is None):
                return True
            if isinstance(t, ast.If) and (returns(t.body) or returns(t.orelse)):
                return True
        return False
    return returns(s.body) or returns(s.orelse)


def single_exit(src: "Source", stmts: list) -> list:
    """A device function with early returns as one with a single return at its end, as a port to
    Taichi would write it: `if c: return a` / `return b` becomes `if c: _ret = a` / `else: _ret = b`
    / `return _ret` (a tuple: `_ret0`, `_ret1`, ...). A return inside a loop is refused."""
    body = lift_early_returns(stmts, values=True)
    returns = [n for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Return)]
    if len(returns) <= 1 or any(r.value is None for r in returns):
        return body
    widths = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else 0 for r in returns}
    if len(widths) != 1:
        raise src.refuse(returns[0], "a device function returning tuples and single values")
    (width,) = widths
    names = [f"_ret{k}" for k in range(width)] if width else ["_ret"]

    def assign_tails(block: list) -> bool:
        last = block[-1] if block else None
        if isinstance(last, ast.Return):
            values = last.value.elts if width else [last.value]
            block[-1:] = [ast.copy_location(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=v), last)
                          for n, v in zip(names, values)]
            return True
        return isinstance(last, ast.If) and bool(last.orelse) and assign_tails(last.body) and \
            assign_tails(last.orelse)

    tails_done = assign_tails(body)
    left = [n for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Return)]
    if not tails_done or left:
        raise src.refuse((left or returns)[0], "a return inside a loop of a device function (a Taichi function "
                                                "returns once, at its end)")
    loads = [ast.Name(id=n, ctx=ast.Load()) for n in names]
    end = ast.Return(value=ast.Tuple(elts=loads, ctx=ast.Load()) if width else loads[0])
    body.append(ast.fix_missing_locations(ast.copy_location(end, returns[-1])))
    return body


def _polls_atomics(loop: ast.While) -> bool:
    """Whether a `while` loop tests (its own condition or an `if` inside it) the result of an atomic
    that reads what other threads set without advancing anything itself: an add or sub of 0, a
    compare-and-swap or an exchange (a lock), directly or through names the loop computes from it
    (`old = cuda.atomic.cas(...)`, then `if old == 0: break`). Such a thread's progress needs
    theirs. A ticket (`cuda.atomic.add(cnt, 0, 1)`) advances its counter and is no poll."""
    def polls(node) -> bool:
        return any(_is_poll(n) for n in ast.walk(node))
    assigns = [n for n in ast.walk(loop) if isinstance(n, (ast.Assign, ast.AugAssign))]
    polled: set[str] = set()
    while True:             # names bound to a poll's result, or to values computed from one
        grown = polled | {t.id for n in assigns
                          if polls(n.value) or any(isinstance(v, ast.Name) and v.id in polled for v in ast.walk(n.value))
                          for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
                          for t in ast.walk(target) if isinstance(t, ast.Name)}
        if grown == polled:
            break
        polled = grown
    tests = [loop.test] + [n.test for n in ast.walk(loop) if isinstance(n, (ast.If, ast.While, ast.IfExp))]
    return any(polls(test) or any(isinstance(n, ast.Name) and n.id in polled for n in ast.walk(test))
               for test in tests)


def _is_poll(node) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "atomic"):
        return False
    op = node.func.attr
    if op in ("cas", "compare_and_swap", "exch"):
        return True
    value = node.args[2] if len(node.args) > 2 else None
    return op in ("add", "sub") and isinstance(value, ast.Constant) and value.value == 0


def _carried_from_ifs(body: list) -> set[str]:
    """Names a loop body binds only inside `if` statements and reads in another of its statements
    (`if c: last = x[k]` then `out[i] += last`): an iteration whose `if` binds nothing reads what an
    earlier iteration left (the engine's rule, lower_loops._read_apart_from_binding)."""
    found = set()
    for b in body:
        if not isinstance(b, ast.If):
            continue
        for name in {n.id for n in ast.walk(b) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}:
            binding = [c for c in body if any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                                              and n.id == name for n in ast.walk(c))]
            if all(isinstance(c, ast.If) for c in binding) and any(
                    c not in binding and name in _reads_deep(c) for c in body):
                found.add(name)
    return found


def _reads_deep(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
