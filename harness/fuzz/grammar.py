"""Random kernels from the grammar the engine claims to support (docs/engine.md).

`generate(seed)` returns a `FuzzKernel`: the kernel module's source text and the case (arguments,
activities, dtypes, launch shape) that runs it. The same seed always gives the same kernel.

Every kernel writes `out` from its inputs through a random program: derivative rules on
domain-safe arguments, branches, ternaries, early returns, static and dynamic loops (any start,
stop and step) with carried values, break and continue, in-place updates, device helpers (early
returns, tuples), atomics (add, max, min, old values used), shared memory with barriers, shuffles,
affine and non-affine (gathered) indices, 2-D grids, integer arrays, Active scalars and aliased
const arguments. `out[i]` always depends linearly on `x[i]`, so a gradient is never legitimately
all zero.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from harness.engine.rules.ops import OPS

# Unary rules on any real argument `{0}` (an atom): bounded, inside every domain, away from kinks.
UNARY = [
    "math.sin({0})", "math.cos({0})", "math.tanh({0})", "math.atan({0})", "math.erf({0})",
    "math.erfc({0})", "math.exp(math.tanh({0}))", "math.expm1(math.sin({0}))", "math.exp2(math.cos({0}))",
    "math.log(1.5 + {0} * {0})", "math.log1p({0} * {0})", "math.log2(2.0 + math.sin({0}))",
    "math.log10(1.0 + {0} * {0})", "math.sqrt(1.0 + {0} * {0})", "math.asin(0.9 * math.tanh({0}))",
    "math.acos(0.9 * math.sin({0}))", "math.atanh(0.9 * math.tanh({0}))", "math.asinh({0})",
    "math.acosh(1.5 + {0} * {0})", "math.sinh(math.sin({0}))", "math.cosh(math.tanh({0}))",
    "math.tan(0.5 * math.atan({0}))", "math.degrees(0.01 * {0})", "math.radians(30.0 * {0})",
    "abs({0})", "math.fabs({0})", "-{0}", "float({0})", "math.ldexp({0}, 2)", "math.nextafter({0}, 0.0)",
    "({0} * {0} + 1.0) ** 0.5", "{0} ** 2", "math.pow(1.2 + {0} * {0}, 0.7)",
]
BINARY = [
    "{0} + {1}", "{0} - {1}", "{0} * {1}", "{0} / (1.5 + {1} * {1})", "min({0}, {1})", "max({0}, {1})",
    "math.atan2({0}, 1.0 + {1} * {1})", "math.hypot({0}, 1.0 + {1})", "math.pow(1.2 + {0} * {0}, math.sin({1}))",
    "math.fmod({0}, 0.7 + {1} * {1})", "{0} % (0.7 + {1} * {1})", "math.remainder({0}, 0.9 + {1} * {1})",
    "math.copysign({0}, {1})", "({0} if {0} > {1} else {1} * 0.5)",
]
COMPARE = ["<", ">", "<=", ">="]

# The grammar's profiles: `bundled` is the whole grammar (the engine's claimed subset); `adapters`
# draws the kernels the Warp and Taichi adapters can express (docs/engines.md): no block-level
# forms (shared memory, barriers, shuffles), no device-side autodiff, no Active scalars (neither
# system has a scalar kernel argument's adjoint), and only the math functions both translate.
# What they still refuse of it (Taichi's while/break/continue, atomics, ...) is counted as refusals.
PROFILES = ("bundled", "adapters")
PORTABLE_MATH = frozenset(op.name for op in OPS if op.math and op.warp and op.taichi and op.fuzz_adapters)


def _portable(template: str) -> bool:
    return "%" not in template and set(re.findall(r"math\.(\w+)", template)) <= PORTABLE_MATH


PORTABLE_UNARY = [t for t in UNARY if _portable(t)]
PORTABLE_BINARY = [t for t in BINARY if _portable(t)]


@dataclass
class FuzzKernel:
    seed: int
    source: str                                   # the kernel module
    args: dict                                    # case `args:` mapping, in parameter order
    launch: dict
    dtypes: list
    features: list = field(default_factory=list)  # grammar productions used (for the summary)
    modes: list = field(default_factory=lambda: ["forward", "reverse"])
    nested: dict | None = None                    # check.nested of a device-side autodiff kernel
    profile: str = "bundled"                      # the grammar profile that drew it (PROFILES)


class _Writer:
    """Builds one kernel body: statements, fresh names, the float locals in scope."""

    def __init__(self, rng: random.Random, loads: list[str], scalars: list[str]):
        self.rng = rng
        self.lines: list[str] = []
        self.indent = 1
        self.n = 0
        self.loads = loads                        # float loads this thread may read, e.g. "x[i]"
        self.scalars = scalars                    # float scalars in scope
        self.locals: list[str] = []
        self.features: set[str] = set()
        self.unary, self.binary = UNARY, BINARY     # the profile's rules (generate)

    def emit(self, text: str):
        self.lines.append("    " * self.indent + text)

    def fresh(self, stem: str = "v") -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def atom(self) -> str:
        pool = self.loads + self.scalars + self.locals * 2
        if self.rng.random() < 0.15 or not pool:
            return repr(round(self.rng.uniform(0.3, 2.0), 2))
        return self.rng.choice(pool)

    def expr(self, depth: int) -> str:
        """A float expression; subexpressions used twice are bound to a name first."""
        if depth <= 0 or self.rng.random() < 0.25:
            return self.atom()
        if self.rng.random() < 0.55:
            template = self.rng.choice(self.unary)
            arg = self.bind(self.expr(depth - 1)) if template.count("{0}") > 1 else self.expr(depth - 1)
            self.features.add("rule")
            return template.format(f"({arg})" if " " in arg else arg)
        template = self.rng.choice(self.binary)
        a, b = self.expr(depth - 1), self.expr(depth - 1)
        if template.count("{0}") > 1:
            a = self.bind(a)
        if template.count("{1}") > 1:
            b = self.bind(b)
        wrap = (lambda s: f"({s})" if " " in s else s)
        return template.format(wrap(a), wrap(b))

    def bind(self, text: str) -> str:
        if text.replace("_", "").replace(".", "").isalnum() and not text[0].isdigit():
            return text
        name = self.fresh("t")
        self.emit(f"{name} = {text}")
        return name

    def cond(self) -> str:
        return f"{self.bind(self.expr(1))} {self.rng.choice(COMPARE)} {round(self.rng.uniform(-0.5, 0.8), 2)}"

    def assign(self, depth: int = 2) -> str:
        name = self.fresh()
        self.emit(f"{name} = {self.expr(depth)}")
        self.locals.append(name)
        return name


def _statement(w: _Writer, kind: str, ctx: dict):
    rng = w.rng
    if kind == "assign":
        w.assign()
    elif kind == "branch":
        w.features.add("branch")
        name = w.fresh()
        w.emit(f"{name} = {w.expr(1)}")
        w.emit(f"if {w.cond()}:")
        w.indent += 1
        w.emit(f"{name} = {w.expr(2)}")
        w.indent -= 1
        if rng.random() < 0.6:
            w.emit("else:")
            w.indent += 1
            w.emit(f"{name} = {name} * {w.expr(1)}")
            w.indent -= 1
        w.locals.append(name)
    elif kind == "ternary":
        w.features.add("ternary")
        name = w.fresh()
        w.emit(f"{name} = {w.expr(1)} if {w.cond()} else {w.expr(1)}")
        w.locals.append(name)
    elif kind == "static_loop":
        w.features.add("static-loop")
        acc, k = w.fresh("acc"), w.fresh("k")
        w.emit(f"{acc} = {w.expr(1)}")
        trips = rng.randint(1, 5)
        w.emit(f"for {k} in range({trips}):")
        w.indent += 1
        w.emit(f"{acc} = {acc} * {round(rng.uniform(0.3, 0.9), 2)} + {w.expr(1)} * ({k} + 1)")
        w.indent -= 1
        w.locals.append(acc)
    elif kind == "dynamic_loop":
        w.features.add("dynamic-loop")
        acc, k = w.fresh("acc"), w.fresh("k")
        w.emit(f"{acc} = {w.expr(1)}")
        start, step = rng.choice([0, 1, 2]), rng.choice([1, 1, 2, 3])
        if rng.random() < 0.3:                     # a counting-down loop
            w.emit(f"for {k} in range(n + {start}, {start - 1}, -{step}):")
        else:
            w.emit(f"for {k} in range({start}, n + {start}, {step}):")
        w.indent += 1
        saved = list(w.locals)
        body = f"{acc} * {round(rng.uniform(0.4, 0.9), 2)} + {w.expr(1)}"
        jump = rng.random()
        if jump < 0.25:
            w.features.add("break")
            w.emit(f"if {acc} > {round(rng.uniform(1.0, 3.0), 2)}:")
            w.emit("    break")
        elif jump < 0.5:
            w.features.add("continue")
            w.emit(f"if {k} % 2 == 1:")
            w.emit("    continue")
        w.emit(f"{acc} = {body}")
        if "atomics" in ctx and rng.random() < 0.3:    # an old value used in every iteration
            _atomic_old(w, ctx["acc_array"], acc)
            ctx["atomics"].add("add")
        w.locals = saved
        w.indent -= 1
        w.locals.append(acc)
    elif kind == "while_loop":
        w.features.add("while-loop")
        acc, k = w.fresh("acc"), w.fresh("k")
        w.emit(f"{acc} = {w.expr(1)}")
        w.emit(f"{k} = 0")
        w.emit(f"while {k} < n:")
        w.indent += 1
        w.emit(f"{acc} = {acc} * 0.5 + {w.expr(1)}")
        w.emit(f"{k} += 1")
        w.indent -= 1
        w.locals.append(acc)
    elif kind == "helper":
        w.features.add("device-helper")
        helper = ctx["helper"]
        a, b = w.bind(w.expr(1)), w.bind(w.expr(1))
        if helper["tuple"]:
            p, q = w.fresh(), w.fresh()
            w.emit(f"{p}, {q} = {helper['name']}({a}, {b})")
            w.locals += [p, q]
        else:
            w.locals.append(w.fresh())
            w.emit(f"{w.locals[-1]} = {helper['name']}({a}, {b})")
    elif kind == "atomic":
        w.features.add("atomic")
        op = rng.choice(["add", "add", "max", "min"])
        target = ctx["acc_array"]
        index = rng.choice(["i % 3", "idx[i] % 3", "0"])
        value = w.bind(w.expr(1))
        if op == "add" and rng.random() < 0.4:
            _atomic_old(w, target, value)
        else:
            w.emit(f"cuda.atomic.{op}({target}, {index}, {value})")
        ctx["atomics"].add(op)
    elif kind == "inplace":
        w.features.add("in-place")
        value = w.bind(w.expr(1))
        w.emit(f"y[i] = y[i] * 0.5 + {value}")
        w.loads = [ld for ld in w.loads if not ld.startswith("y[")]


def _atomic_old(w: _Writer, target: str, value: str):
    """An atomic's old value used as an index. Each thread counts in its own slot of `cnt`, so the
    old values are the same in every launch (with one shared counter they would depend on thread
    order, and so would the primal: a nondeterministic kernel, not a derivative bug)."""
    w.features.add("atomic-old")
    old = w.fresh("old")
    w.emit(f"{old} = cuda.atomic.add(cnt, i, 1)")
    w.emit(f"cuda.atomic.add({target}, {old} % 3, {value})")


def _uses(w: _Writer) -> str:
    """Every local flows into out (a linear combination), so no production is dead code."""
    return "".join(f" + {round(w.rng.uniform(0.2, 0.9), 2)} * {v}" for v in w.locals)


def _helper_source(rng: random.Random, tuple_result: bool) -> str:
    early = rng.random() < 0.5
    lines = ["@cuda.jit(device=True)", "def helper(a, b):"]
    if early:
        lines += ["    if a > b:", f"        return {'a * b, a' if tuple_result else 'math.sin(a) * b'}"]
    body = "math.tanh(a) + b, a * 0.5" if tuple_result else "a * math.cos(b) + 0.5 * b"
    lines.append(f"    return {body}")
    return "\n".join(lines) + "\n"


def _nested(seed: int, rng: random.Random, dtype: str) -> FuzzKernel:
    """A kernel calling autodiff(Forward|Reverse, f, ...) on the device, per thread, on a generated f."""
    size = rng.randint(3, 16)
    mode = rng.choice(["forward", "reverse"])
    w = _Writer(rng, ["x[i]", f"x[(i + 1) % {size}]", f"x[{size - 1} - i]"], [])
    kinds = ["assign", "assign", "branch", "ternary", "static_loop", "while_loop", "dynamic_loop"]
    for _ in range(rng.randint(1, 4)):
        _statement(w, rng.choice(kinds), {})
    w.emit(f"out[i] = {w.expr(2)} + 0.5 * x[i]{_uses(w)}")
    source = "\n".join([
        "import math", "", "from numba import cuda", "",
        "from harness import Const, Duplicated, Forward, Reverse, autodiff", "", "",
        "def f(out, x, i, n):", *w.lines, "", "",
        "def kernel(out, dout, x, dx, n):",
        "    i = cuda.grid(1)",
        "    if i < out.shape[0]:",
        f"        autodiff({mode.capitalize()}, f, Duplicated(out, dout), Duplicated(x, dx), Const(i), Const(n))", ""])
    arr = (lambda init: {"array": {"shape": [size], "dtype": dtype, "init": init}, "activity": "const"})
    args = {"out": arr("zeros"), "dout": arr("normal"), "x": arr("normal"), "dx": arr("normal"),
            "n": {"scalar": {"value": rng.randint(0, 5), "dtype": "int64"}}}
    return FuzzKernel(seed, source, args, {"threads": size, "block": rng.choice([4, 8, 16])}, [dtype],
                      sorted({"device-autodiff", f"device-autodiff-{mode}"} | w.features), modes=["primal"],
                      nested={"function": "f", "mode": mode, "args": {"out": {"shadow": "dout"},
                                                                      "x": {"shadow": "dx"}}})


def generate(seed: int, profile: str = "bundled") -> FuzzKernel:
    """Seed `seed`'s kernel of `profile` (PROFILES); the bundled profile's kernels are the ones every
    earlier campaign ran (an adapters kernel of a seed is another kernel)."""
    if profile not in PROFILES:
        raise ValueError(f"grammar profile {profile!r}: choose from {', '.join(PROFILES)}")
    portable = profile == "adapters"
    rng = random.Random(seed)
    if portable:
        form = rng.choices(["grid1", "grid2"], weights=[6, 2])[0]
    else:
        form = rng.choices(["grid1", "shared", "grid2", "nested"], weights=[6, 2, 2, 1.5])[0]
    if form == "nested":
        return _nested(seed, rng, rng.choice(["float64", "float64", "float32"]))
    features = {form}
    dtype = rng.choice(["float64", "float64", "float32"])
    x_act = rng.choice(["duplicated", "duplicated", "const"])
    y_act = rng.choice(["duplicated", "const", "duplicated_no_need"]) if form != "grid2" else "const"
    a_act = rng.choice(["active", "const"])
    if portable:
        a_act = "const"
    ctx = {"helper": {"name": "helper", "tuple": rng.random() < 0.4}, "acc_array": "acc", "atomics": set()}
    header = ["import math", "", "from numba import cuda, float32, float64", "", ""]
    helper_used = rng.random() < 0.3
    if helper_used:
        header += [_helper_source(rng, ctx["helper"]["tuple"]), ""]

    if form == "grid2":
        rows, cols = rng.randint(2, 5), rng.randint(2, 5)
        params = ["out", "x", "y", "a"]
        loads = ["x[i, j]", f"x[(i + 1) % {rows}, j]", f"y[i, (j * 2) % {cols}]"]
        w = _Writer(rng, loads, ["a"])
        if portable:
            w.unary, w.binary = PORTABLE_UNARY, PORTABLE_BINARY
        body_start = ["    i, j = cuda.grid(2)"]
        if rng.random() < 0.5:
            body_start += ["    if i >= out.shape[0] or j >= out.shape[1]:", "        return"]
            indent = 1
        else:
            body_start += ["    if i < out.shape[0] and j < out.shape[1]:"]
            indent = 2
        w.indent = indent
        kinds = ["assign", "branch", "ternary", "static_loop"] + (["helper"] if helper_used else [])
        for _ in range(rng.randint(1, 4)):
            _statement(w, rng.choice(kinds), ctx)
        w.emit(f"out[i, j] = {w.expr(2)} + 0.5 * x[i, j]{_uses(w)}")
        shape = [rows, cols]
        args = {
            "out": {"array": {"shape": shape, "dtype": dtype, "init": "zeros"}, "activity": "duplicated"},
            "x": {"array": {"shape": shape, "dtype": dtype, "init": "normal"}, "activity": x_act},
            "y": {"array": {"shape": shape, "dtype": dtype, "init": "normal"}, "activity": "const"},
            "a": {"scalar": {"value": round(rng.uniform(0.5, 1.5), 3), "dtype": dtype}, "activity": a_act},
        }
        launch = {"threads": shape, "block": [rng.choice([2, 4]), rng.choice([2, 4])]}
        if rng.random() < 0.3:                    # an aliased const argument: plain primal semantics
            features.add("alias")
            args["y"] = {"alias": "x", "activity": "const"} if x_act == "const" else args["y"]
    else:
        shared = form == "shared"
        block = 32 if shared else rng.choice([4, 8, 16])
        n_threads = block * rng.choice([1, 2]) if shared else rng.randint(3, 24)
        size = n_threads
        # A grid-stride loop (each thread owns elements t, t + G, ...) in a quarter of the 1-D
        # kernels, drawn from a side stream so every other seed keeps the kernel it always had.
        side = random.Random(seed * 7919 + 17)
        grid_stride = not shared and side.random() < 0.25
        if grid_stride:
            size = n_threads * side.choice([2, 3]) + side.randint(0, n_threads - 1)
        params = ["out", "x", "y", "a", "idx", "n", "acc", "cnt"]
        # A kernel that updates y in place reads y only at its own index: a read of y[i + 1] beside
        # the write of y[i] is a data race in the primal itself (seed 34 of the second campaign).
        inplace = y_act == "duplicated" and rng.random() < 0.4
        loads = ["x[i]", "y[i]", "x[idx[i]]", f"x[{size - 1} - i]"] + ([] if inplace else [f"y[(i + 1) % {size}]"])
        w = _Writer(rng, loads, ["a"])
        if portable:
            w.unary, w.binary = PORTABLE_UNARY, PORTABLE_BINARY
        body_start = ["    i = cuda.grid(1)"]
        indent = 1
        if grid_stride:
            features.add("grid-stride")
            body_start = ["    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):"]
            indent = 2
        elif shared:
            features.add("shared")
            body_start += ["    t = cuda.threadIdx.x",
                           f"    sh = cuda.shared.array({block}, {'float64' if dtype == 'float64' else 'float32'})"]
        elif rng.random() < 0.5:
            features.add("early-return")
            body_start += ["    if i >= out.shape[0]:", "        return"]
        else:
            body_start += ["    if i < out.shape[0]:"]
            indent = 2
        w.indent = indent
        kinds = ["assign", "assign", "branch", "ternary", "static_loop", "dynamic_loop", "while_loop", "atomic"] + \
            (["helper"] if helper_used else []) + (["inplace"] if inplace else [])
        for _ in range(rng.randint(1, 5)):
            _statement(w, rng.choice(kinds), ctx)
        if shared:
            v = w.bind(w.expr(2))
            w.emit(f"sh[t] = {v}")
            w.emit("cuda.syncthreads()")
            u = w.fresh()
            w.emit(f"{u} = sh[(t + {rng.randint(1, block - 1)}) % {block}] * {v}")
            w.locals.append(u)
            if rng.random() < 0.5:
                features.add("shuffle")
                s = w.fresh()
                op = rng.choice(["shfl_down_sync", "shfl_up_sync", "shfl_xor_sync"])
                w.emit(f"{s} = cuda.{op}(0xFFFFFFFF, {u}, {rng.choice([1, 2, 4])})")
                w.locals.append(s)
        w.emit(f"out[i] = {w.expr(2)} + 0.5 * x[i]{_uses(w)}")
        perm = list(range(size))
        rng.shuffle(perm)
        idx_dtype = rng.choice(["int32", "int64"])
        args = {
            "out": {"array": {"shape": [size], "dtype": dtype, "init": "zeros"}, "activity": "duplicated"},
            "x": {"array": {"shape": [size], "dtype": dtype, "init": "normal"}, "activity": x_act},
            "y": {"array": {"shape": [size], "dtype": dtype, "init": "normal"}, "activity": y_act},
            "a": {"scalar": {"value": round(rng.uniform(0.5, 1.5), 3), "dtype": dtype}, "activity": a_act},
            "idx": {"array": {"shape": [size], "dtype": idx_dtype, "init": {"values": perm}}},
            "n": {"scalar": {"value": rng.randint(0, 6), "dtype": "int64"}},
            "acc": {"array": {"shape": [3], "dtype": dtype, "init": "normal"},
                    "activity": "duplicated" if ctx["atomics"] else "const"},
            "cnt": {"array": {"shape": [size], "dtype": "int32", "init": "zeros"}},
        }
        launch = {"threads": n_threads, "block": block}
    features |= w.features
    source = "\n".join(header) + f"def kernel({', '.join(params)}):\n" + "\n".join(body_start + w.lines) + "\n"
    return FuzzKernel(seed, source, args, launch, [dtype], sorted(features), profile=profile)
