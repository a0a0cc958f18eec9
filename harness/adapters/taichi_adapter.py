"""Taichi adapter: the case's numba.cuda kernel as a `ti.kernel` with one parallel loop over the
launch's threads; reverse mode through `ti.ad.Tape`, forward mode through `ti.ad.FwdMode`.

Translation (harness/adapters/translate.py walks the kernel; this file spells it in Taichi):
- the kernel body runs inside `for _t0 in range(threads)` (or `ti.ndrange` for 2-D/3-D launches);
  cuda.grid and threadIdx/blockIdx/... are derived from the loop index and the launch's blocks.
- an early `return` becomes an `else` around the rest of the body (Taichi's parallel loop has no
  early exit, and its autodiff refuses `continue` there); a return inside a loop is refused.
- numba's types are explicit casts (`ti.cast(x, ti.f64)`); integers are i32.
- `a[i] += v` is Taichi's `a[i] += v` (an atomic add in Taichi); `cuda.atomic.*` are `ti.atomic_*`.
- device functions are `@ti.func`, one per argument-type signature; arrays are fields passed as
  `ti.template()`.

Activities: every float array is a field with `needs_grad` and `needs_dual`. Reverse: inside
`ti.ad.Tape(loss=L)` the kernel runs, then a seeding kernel adds <w, final state> to L, so the
tape's backward pass starts from the shadows' cotangents (Taichi, like the harness, consumes the
gradient of an element a kernel stores to). Forward: inside `ti.ad.FwdMode` every input's dual is
the tangent (FwdMode itself seeds one field, in float32; the duals are set in full precision
inside its context) and the outputs' duals are read before it exits. Scalar kernel arguments carry
no gradient or dual in Taichi, and there are no batched shadows: UnsupportedError.
"""
from __future__ import annotations

import math

import numpy as np

from harness.engine.rules.ops import spelled_by
from harness.core.errors import UnsupportedError
from harness.adapters.adapter import Adapter, Arg
from harness.adapters.limits import LIMITS, refusal
from harness.adapters.translate import BOOL, F32, F64, INT, INT_ARRAYS, Arr, Function, LaunchInfo, Target

_SCALAR = {F32: "ti.f32", F64: "ti.f64", INT: "ti.i32", BOOL: "ti.i32"}
_ELEM = {F32: "ti.f32", F64: "ti.f64", **{code: f"ti.{code}" for code in INT_ARRAYS}}


class TaichiTarget(Target):
    name = "Taichi"
    system = "taichi"

    def __init__(self, block_level: bool = False):
        self.block_level = block_level       # ti.simt.block exists on GPU backends only
    math = spelled_by("taichi")    # the op table's Taichi spellings (harness/engine/rules/ops.py)

    hoist_locals = True      # a Taichi variable lives in the block that first assigns it
    single_return = True     # Taichi refuses a return inside a non-static if

    def module_header(self):
        return ["import taichi as ti"]

    def body_depth(self, kernel: bool) -> int:
        return 2 if kernel else 1

    def kernel_return(self):
        return None

    def literal(self, value, t):
        if t == INT:
            return str(int(value))
        if math.isnan(value):
            return f"{_SCALAR[t]}(ti.math.nan)"
        if math.isinf(value):
            return f"{_SCALAR[t]}({'-' if value < 0 else ''}ti.math.inf)"
        return f"{_SCALAR[t]}({float(value)!r})"

    def cast(self, code, src, dst):
        if src is None or dst is None or src == dst:
            return code
        return f"ti.cast({code}, {_SCALAR[dst]})"

    def _sig(self, fn: Function, func: bool) -> str:
        parts = []
        for p in fn.params:
            if isinstance(p.type, Arr):
                parts.append(f"{p.name}: ti.template()")
            else:
                parts.append(f"{p.name}: {_SCALAR[p.type]}")
        return ", ".join(parts)

    def kernel_header(self, fn, launch: LaunchInfo):
        n = len(launch.threads)
        loop = (f"for _t0 in range({launch.threads[0]}):" if n == 1 else
                f"for {', '.join(f'_t{k}' for k in range(n))} in ti.ndrange({', '.join(map(str, launch.threads))}):")
        head = ["@ti.kernel", f"def {fn.name}({self._sig(fn, False)}):"]
        if fn.block_level:        # Taichi's documented pattern: block_dim threads, tid = i % block_dim
            head.append(f"    ti.loop_config(block_dim={launch.block[0]})")
        return head + [f"    {loop}"]

    def func_header(self, fn):
        ret = ""
        if fn.returns is not None:
            items = fn.returns.items if hasattr(fn.returns, "items") else None
            if items and len(set(items)) != 1:
                raise UnsupportedError(f"{fn.name} returns a tuple of mixed types {items}: a Taichi function "
                                       "returns one vector type")
            ret = f" -> ti.types.vector({len(items)}, {_SCALAR[items[0]]})" if items else f" -> {_SCALAR[fn.returns]}"
        return ["@ti.func", f"def {fn.name}({self._sig(fn, True)}){ret}:"]

    def return_tuple(self, codes):
        return f"return ti.Vector([{', '.join(codes)}])"

    def thread_index(self, dim):
        return f"_t{dim}"

    def load(self, arr, index, t):
        code = f"{arr}[{', '.join(index)}]"
        return f"ti.cast({code}, ti.i32)" if t.dtype in INT_ARRAYS and t.dtype != "i32" else code

    def store(self, arr, index, value, t):
        if t.dtype in INT_ARRAYS and t.dtype not in ("i32", "i64"):
            value = f"ti.cast({value}, {_ELEM[t.dtype]})"
        return f"{arr}[{', '.join(index)}] = {value}"

    def wrap_index(self, code, extent):
        return f"ti.select({code} < 0, {code} + {extent}, {code})"

    def shared_array(self, name, shape, elem):
        return f"{name} = ti.simt.block.SharedArray({tuple(shape)!r}, {_ELEM[elem]})"

    def barrier(self):
        return "ti.simt.block.sync()"

    def local_array(self, name, shape, elem):
        dt = _SCALAR[elem] if elem != "i32" else "ti.i32"
        if len(shape) == 1:
            return f"{name} = ti.Vector.zero({dt}, {shape[0]})"
        return f"{name} = ti.Matrix.zero({dt}, {shape[0]}, {shape[1]})"

    def stepped_range(self, var, parts):
        """Taichi's range takes no step: count the trips as Python's range does (either sign of
        step) and derive the counter, as a port would write it."""
        start, stop, step = parts
        trips = f"ti.max(0, ({stop} - {start} + {step} - ti.select({step} > 0, 1, -1)) // {step})"
        k = f"_k_{var}"
        return [f"for {k} in range({trips}):", f"{var} = {start} + {k} * {step}"]

    def select(self, cond, a, b):
        return f"ti.select({cond}, {a}, {b})"

    def atomic(self, op, arr, index, value, t):
        code = f"ti.atomic_{op}({arr}[{', '.join(index)}], {value})"
        return f"ti.cast({code}, ti.i32)" if t.dtype in INT_ARRAYS and t.dtype != "i32" else code  # an i32, like a load

    def min_max(self, name, a, b):
        return f"ti.{name}({a}, {b})"


# process-wide: ti.init configures the Taichi runtime of the whole process and may run once
_initialized = None
AD_STACK_SIZE = 1024

# Taichi 1.7.4 puts the fields declared between two kernel launches in an SNode tree of their own,
# has room for 512 trees per program, and past them segfaults (no error): the process dies at the
# 513th. A long session (the whole corpus through one worker, a fuzz worker) declares more fields
# than that, so the adapter counts the fields it declares (each counted as a tree: fields declared
# together share one, so this overcounts) and, at the start of a run, when none of its fields is in
# use, starts a new Taichi program (ti.reset) before a run could pass FIELD_BUDGET. The
# reproducer is reproducers/taichi_snode_tree_limit.py.
FIELD_BUDGET = 400           # of Taichi's 512 trees
_declared_fields = 0
_program = 0                 # how many Taichi programs this process has started (fields belong to one)


class _IntLike:
    """An argument's shape with int32 elements: the key and type of its store-mask field."""
    def __init__(self, a):
        self.position, self.name = a.position, a.name
        self.host = np.zeros(a.host.shape, np.int32)


def _init_options(arch: str) -> dict:
    import taichi as ti
    # Taichi 1.7.4's default AD stack overflowed at 80 iterations of a loop-carried variable and
    # the process died with a bus error (warp-running-product, tape-overflow); debug=True, which
    # would check, breaks Tape's gradient clearing. A fixed, larger stack is Taichi's own option.
    return dict(arch=ti.cuda if arch == "cuda" else ti.cpu, log_level=ti.ERROR, offline_cache=True,
                ad_stack_size=AD_STACK_SIZE)


def _init(arch: str):
    global _initialized
    import taichi as ti
    if _initialized is None:
        ti.init(**_init_options(arch))
        _initialized = arch
    return ti


def _make_room(ti, fields_needed: int) -> None:
    """Start a new Taichi program if declaring `fields_needed` more fields could pass the budget.
    Every field of the old program is gone after this (the adapters' caches check `_program`);
    compiled kernels are compiled again on their next launch."""
    global _declared_fields, _program
    if _declared_fields + fields_needed <= FIELD_BUDGET:
        return
    ti.reset()
    ti.init(**_init_options(_initialized))
    _declared_fields, _program = 0, _program + 1


class TaichiAdapter(Adapter):
    name = "taichi"
    system = "taichi"
    store_mask = True

    def __init__(self, backend):
        super().__init__(backend)
        self.target = TaichiTarget(block_level=backend.name == "cuda")
        self.ti = _init("cuda" if backend.name == "cuda" else "cpu")
        self._fields: dict[tuple, object] = {}
        self._program = _program
        from harness.adapters import taichi_seed
        self._seed = taichi_seed

    @property
    def version(self) -> str:
        return ".".join(map(str, self.ti.__version__))

    def refuse_mode(self, args: list[Arg], mode: str) -> str | None:
        if mode == "primal":
            return None
        for a in args:
            if a.kind == "scalar" and a.differentiable:
                what = "gradient" if mode == "reverse" else "dual (tangent)"
                return (f"argument {a.position} ('{a.name}'): a Taichi kernel's scalar argument has no {what} "
                        f"(Active); pass it as a one-element field instead (see {LIMITS['active_scalar'].taichi_link})")
        return None

    def refuse_translation(self, kernel, args, mode):
        if mode != "primal" and kernel.dynamic_local_index is not None and any(a.differentiable for a in args):
            file, line = kernel.dynamic_local_index
            return str(refusal("local_dynamic_index", "taichi", "a store into a local array at a run-time index",
                               file=file, line=line))
        return None

    def _field(self, role: str, a: Arg):
        """Fields are reused per (argument, role, dtype, shape): a kernel taking fields as templates
        compiles once per set of fields, and Taichi never frees a field."""
        ti = self.ti
        key = (a.position, role, a.host.dtype.str, a.host.shape)
        if key not in self._fields:
            dt = a.host.dtype
            dtype = {np.dtype(np.float32): ti.f32, np.dtype(np.float64): ti.f64}.get(dt) or \
                (getattr(ti, f"{dt.kind}{dt.itemsize * 8}") if dt.kind in "iu" else None)
            if dtype is None:
                raise UnsupportedError(f"argument {a.position} ('{a.name}'): {a.host.dtype} arrays")
            floating = np.issubdtype(a.host.dtype, np.floating) and role == "primal"
            self._fields[key] = self._declare(dtype, shape=a.host.shape, needs_grad=floating, needs_dual=floating)
        return self._fields[key]

    def make_room(self, args) -> None:
        """Before a run: room in this Taichi program for every field the run may declare (a primal
        and a store mask per array, the scratch and loss fields)."""
        _make_room(self.ti, 2 * len(args) + 2)
        if self._program != _program:          # the program was replaced: its fields went with it
            self._fields.clear()
            self._program = _program

    def run(self, module, fname, args, launch, mode):
        ti = self.ti
        self.make_room(args)
        kernel = getattr(module, fname)
        inputs, fields = [], []
        self._initial = {a.position: a.host.copy() for a in args if a.kind == "array"}
        for a in args:
            if a.kind == "array":
                f = self._field("primal", a)
                f.from_numpy(a.host)
                fields.append((a, f))
                inputs.append(f)
            else:
                inputs.append(float(a.host) if a.type in (F32, F64) else int(a.host))
        diff = [(a, f) for a, f in fields if a.differentiable and mode != "primal"]
        try:
            if mode == "primal":
                kernel(*inputs)
            elif mode == "reverse":
                loss = self._loss()
                seeds = []
                for a, f in diff:             # filled before the tape: it records every kernel call
                    w = self._field("cotangent", a)
                    w.from_numpy(a.shadows[0].astype(a.host.dtype))
                    seeds.append((f, w))
                with ti.ad.Tape(loss=loss):
                    kernel(*inputs)
                    for f, w in seeds:
                        self._seed.add_inner_product(loss, f, w)
                for a, f in diff:
                    a.shadows[0][...] = f.grad.to_numpy()
            else:
                # FwdMode seeds one field, in float32; every input's dual is set here in full
                # precision before entering (inside the context every kernel, from_numpy's too,
                # runs in forward mode), and FwdMode's own seed goes to a scratch field.
                for a, f in fields:           # a Const field keeps its dual from an earlier run
                    if np.issubdtype(a.host.dtype, np.floating):    # (fields are reused per shape)
                        f.dual.fill(0)
                for a, f in diff:
                    f.dual.from_numpy(a.shadows[0].astype(a.host.dtype))
                if diff:
                    with ti.ad.FwdMode(loss=[f for _, f in diff], param=self._scratch(), seed=[0.0],
                                       clear_gradients=False):
                        kernel(*inputs)
                else:
                    kernel(*inputs)
                stored = self._stored(module, fname, args, inputs, fields) if diff else {}
                for a, f in diff:
                    # Taichi's forward mode adds a stored value's dual into the element's dual (its
                    # FwdMode zeroes every dual first); the harness's tangent of an element a store
                    # replaced is the stored value's alone, so the incoming tangent is taken out there.
                    a.shadows[0][...] = f.dual.to_numpy() - np.where(stored[a.position], a.shadows[0], 0)
        except RuntimeError as exc:
            if "auto_diff" in str(exc) or "Not supported" in str(exc):
                raise UnsupportedError(f"Taichi's autodiff refuses the kernel ({mode}): {exc} "
                                       f"(see {LIMITS['ad_control'].taichi_link})") from exc
            raise
        ti.sync()
        for a, f in fields:
            a.host[...] = f.to_numpy()
        return {}

    def run_native(self, kernel, args, launch, mode):
        from harness.adapters.taichi_native import run
        self.make_room(args)
        return run(self, kernel, args, launch, mode)

    def _stored(self, module, fname, args, inputs, fields) -> dict:
        """Which elements of each array the kernel stores to (plain stores), from its `__stores`
        twin run on the initial values (which are then restored)."""
        masks, extra = {}, []
        for a, f in fields:
            m = self._field("stored", _IntLike(a))
            m.fill(0)
            extra.append(m)
            masks[a.position] = m
        saved = {a.position: f.to_numpy() for a, f in fields}
        for a, f in fields:
            f.from_numpy(self._initial[a.position])
        getattr(module, f"{fname}__stores")(*inputs, *extra)
        for a, f in fields:
            f.from_numpy(saved[a.position])
        return {pos: m.to_numpy().astype(bool) for pos, m in masks.items()}

    def _declare(self, dtype, **options):
        """A new field, counted against FIELD_BUDGET."""
        global _declared_fields
        _declared_fields += 1
        return self.ti.field(dtype, **options)

    def _scratch(self):
        if "scratch" not in self._fields:
            self._fields["scratch"] = self._declare(self.ti.f64, shape=(), needs_grad=True, needs_dual=True)
        return self._fields["scratch"]

    def _loss(self):
        if "loss" not in self._fields:
            self._fields["loss"] = self._declare(self.ti.f64, shape=(), needs_grad=True)
        return self._fields["loss"]
