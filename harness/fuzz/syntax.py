"""The syntax fuzzer: random kernels in the whole numba.cuda dialect, to prove no crash leaves the engine.

harness/fuzz/grammar.py generates kernels from the grammar the engine claims, to find wrong
gradients. This module generates kernels from what numba.cuda accepts (tuples and unpacking,
augmented assignment on subscripts, nested if/for/while with break and continue, comparison chains,
ternaries, boolean, integer and bit operations, casts, shared and local arrays in positional and
keyword form, math calls, device functions, len/shape/size, assert, atomics, barriers), keeps the
kernels numba itself compiles (on the ptx backend, the engine's own primal build is numba's
compile; on the simulator the generator's typing discipline stands in for it), and builds each
one's forward and reverse derivative. Nothing is launched and no gradient is judged: the only
question is whether anything but a refusal (UnsupportedError naming a line, or the launch
contract's errors) leaves the engine. Anything else, an EngineInternalError from the engine's last
line of defence (harness/engine/guard.py) included, is a crash, reported with the kernel source and
its traceback.

Typing discipline (so numba accepts what is generated): float and integer variables live in
separate pools and are all defined before any control flow, so every variable has one type on
every path; indices are reduced into bounds (`% n`, `min(..., n - 1)`), and divisors are never zero.
"""
from __future__ import annotations

import importlib.util
import json
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

N = 16                                            # every array's length; the launch has N threads
FLOATS = ["a", "b", "t"]
INTS = ["k", "m"]
UNARY_MATH = ["math.sin", "math.cos", "math.tanh", "math.exp", "math.atan", "math.fabs", "math.floor",
              "math.ceil", "abs", "math.erf"]
SAFE_MATH = [("math.sqrt", "abs({}) + 1.0"), ("math.log", "abs({}) + 1.0"), ("math.log1p", "abs({})"),
             ("math.asinh", "{}"), ("math.expm1", "math.sin({})")]
BINARY_MATH = ["math.atan2", "math.hypot", "math.copysign", "min", "max", "math.pow"]


@dataclass
class SyntaxKernel:
    seed: int
    source: str
    name: str
    features: list[str] = field(default_factory=list)


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.features: list[str] = []
        self.depth = 0
        self.helpers: list[str] = []
        self.helper_kinds: list[str] = []
        self.shared = False
        self.local = False

    def note(self, feature: str) -> None:
        if feature not in self.features:
            self.features.append(feature)

    # ---------------------------------------------------------------- expressions
    def index(self) -> str:
        r = self.r
        choice = r.randrange(9)
        if choice == 0:
            return "i"
        if choice == 1:
            self.note("index-mod")
            return f"({self.iexpr(1)}) % n"
        if choice == 2:
            self.note("gather")
            return "idx[i]"
        if choice == 3:
            self.note("len")
            return "len(x) - 1 - i"
        if choice == 4:
            self.note("shape")
            return "x.shape[0] - 1 - i"
        if choice == 5:
            self.note("min-index")
            return "min(i + 1, n - 1)"
        if choice == 6:
            self.note("negative-index")
            return "-1 - i"
        if choice == 7:
            self.note("int-var-index")
            return f"{r.choice(INTS)} % n"
        return "(i * 3 + 1) % n"

    def iexpr(self, depth: int = 2) -> str:
        r = self.r
        if depth <= 0 or r.random() < 0.35:
            return r.choice(["i", "n", str(r.randrange(0, 7)), *INTS, "cuda.threadIdx.x", "cuda.blockIdx.x",
                             "cuda.blockDim.x", "len(c)", "x.size", "idx[i]"])
        op = r.randrange(8)
        a, b = self.iexpr(depth - 1), self.iexpr(depth - 1)
        if op == 0:
            self.note("int-arith")
            return f"({a} {r.choice(['+', '-', '*'])} {b})"
        if op == 1:
            self.note("int-div")
            return f"({a} {r.choice(['//', '%'])} ({b} % 5 + 1))" if r.random() < 0.5 \
                else f"({a} // 3)"
        if op == 2:
            self.note("bit-op")
            return f"({a} {r.choice(['&', '|', '^'])} {b})"
        if op == 3:
            self.note("shift")
            return f"({a} {r.choice(['<<', '>>'])} {r.randrange(0, 4)})"
        if op == 4:
            self.note("int-cast")
            return f"{r.choice(['int', 'int32', 'int64'])}({self.fexpr(depth - 1)})"
        if op == 5:
            self.note("int-ternary")
            return f"({a} if {self.cond(depth - 1)} else {b})"
        if op == 6:
            self.note("int-minmax")
            return f"{r.choice(['min', 'max'])}({a}, {b})"
        self.note("invert")
        return f"(~{a})"

    def fexpr(self, depth: int = 2) -> str:
        r = self.r
        if depth <= 0 or r.random() < 0.3:
            leaf = r.randrange(7)
            if leaf == 0:
                return f"x[{self.index()}]"
            if leaf == 1:
                self.note("const-coefficients")
                return f"c[{r.randrange(4)}]"
            if leaf == 2:
                return repr(round(r.uniform(-2, 2), 3))
            if leaf == 3 and self.shared:
                return "sm[cuda.threadIdx.x]"
            if leaf == 4 and self.local:
                return f"la[{r.randrange(4)}]"
            if leaf == 5:
                self.note("float-of-int")
                return f"float({self.iexpr(0)})"
            return r.choice(FLOATS)
        op = r.randrange(10)
        a, b = self.fexpr(depth - 1), self.fexpr(depth - 1)
        if op <= 1:
            self.note("float-arith")
            return f"({a} {r.choice(['+', '-', '*'])} {b})"
        if op == 2:
            self.note("division")
            return f"({a} / (abs({b}) + 1.0))"
        if op == 3:
            self.note("unary-math")
            return f"{r.choice(UNARY_MATH)}({a})"
        if op == 4:
            f, arg = r.choice(SAFE_MATH)
            self.note("domain-math")
            return f"{f}({arg.format(a)})"
        if op == 5:
            f = r.choice(BINARY_MATH)
            self.note("binary-math")
            if f == "math.pow":
                return f"math.pow(abs({a}) + 0.5, {r.choice(['2.0', '0.5', '3.0'])})"
            return f"{f}({a}, {b})"
        if op == 6:
            self.note("ternary")
            return f"({a} if {self.cond(depth - 1)} else {b})"
        if op == 7:
            self.note("float-cast")
            return f"{r.choice(['float64', 'float32', 'numba.float64'])}({a})"
        if op == 8 and self.helpers:
            h = r.randrange(len(self.helpers))
            self.note("device-function")
            if self.helper_kinds[h] == "tuple":
                return f"{self.helpers[h]}({a}, {b})[{r.randrange(2)}]"
            return f"{self.helpers[h]}({a}, {b})"
        self.note("unary-minus")
        return f"(-{a})"

    def cond(self, depth: int = 1) -> str:
        r = self.r
        kind = r.randrange(6)
        if kind == 0:
            self.note("compare-chain")
            return f"0 <= {r.choice(INTS)} < n"
        if kind == 1:
            self.note("bool-op")
            return f"({self.cond(0)} {r.choice(['and', 'or'])} {self.cond(0)})"
        if kind == 2:
            self.note("not")
            return f"not ({self.fexpr(0)} > 0.0)"
        if kind == 3:
            return f"{self.iexpr(depth)} {r.choice(['<', '<=', '==', '!=', '>', '>='])} {self.iexpr(0)}"
        return f"{self.fexpr(depth)} {r.choice(['<', '<=', '>', '>='])} {self.fexpr(0)}"

    # ---------------------------------------------------------------- statements
    def stmts(self, ind: int, count: int, in_loop: bool = False) -> list[str]:
        out = []
        for _ in range(count):
            out += self.stmt(ind, in_loop)
        return out

    def stmt(self, ind: int, in_loop: bool) -> list[str]:
        r, pad = self.r, "    " * ind
        nested = self.depth < 2
        kind = r.randrange(22 if nested else 14)
        if kind == 0:
            return [f"{pad}{r.choice(FLOATS)} = {self.fexpr()}"]
        if kind == 1:
            return [f"{pad}{r.choice(INTS)} = {self.iexpr()}"]
        if kind == 2:
            self.note("tuple-assign")
            u, v = r.sample(FLOATS, 2)
            return [f"{pad}{u}, {v} = {self.fexpr(1)}, {self.fexpr(1)}"]
        if kind == 3:
            self.note("swap")
            u, v = r.sample(FLOATS, 2)
            return [f"{pad}{u}, {v} = {v}, {u}"]
        if kind == 4:
            self.note("nested-unpack")
            u, v, w = r.sample(FLOATS, 3)
            return [f"{pad}({u}, {v}), {w} = ({self.fexpr(0)}, {self.fexpr(0)}), {self.fexpr(1)}"]
        if kind == 5:
            self.note("augassign")
            return [f"{pad}{r.choice(FLOATS)} {r.choice(['+=', '-=', '*='])} {self.fexpr(1)}"]
        if kind == 6:
            self.note("int-augassign")
            return [f"{pad}{r.choice(INTS)} {r.choice(['+=', '-=', '^=', '|=', '&=', '>>='])} {self.iexpr(1)}"]
        if kind == 7:
            self.note("subscript-augassign")
            return [f"{pad}out[{self.index()}] {r.choice(['+=', '-=', '*='])} {self.fexpr(1)}"]
        if kind == 8:
            self.note("subscript-store")
            return [f"{pad}out[{self.index()}] = {self.fexpr()}"]
        if kind == 9:
            self.note("atomic")
            op = r.choice(["add", "add", "max", "min"])
            return [f"{pad}cuda.atomic.{op}(out, {self.index()}, {self.fexpr(1)})"]
        if kind == 10 and self.local:
            self.note("local-store")
            return [f"{pad}la[{r.choice(INTS)} % 4] = {self.fexpr(1)}"]
        if kind == 11:
            self.note("assert")
            return [f"{pad}assert {self.cond(0)}"] if r.random() < 0.3 else [f"{pad}assert n > 0, \"empty\""]
        if kind == 12 and in_loop:
            self.note("break-continue")
            return [f"{pad}if {self.cond(0)}:", f"{pad}    {r.choice(['break', 'continue'])}"]
        if kind == 13:
            self.note("tuple-from-helper")
            if "tuple" in self.helper_kinds:
                h = self.helpers[self.helper_kinds.index("tuple")]
                u, v = r.sample(FLOATS, 2)
                return [f"{pad}{u}, {v} = {h}({self.fexpr(0)}, {self.fexpr(0)})"]
            return [f"{pad}pass"]
        # compound statements
        self.depth += 1
        try:
            if kind in (14, 15):
                self.note("if")
                lines = [f"{pad}if {self.cond()}:"] + self.stmts(ind + 1, r.randint(1, 2), in_loop)
                if r.random() < 0.4:
                    self.note("elif")
                    lines += [f"{pad}elif {self.cond()}:"] + self.stmts(ind + 1, 1, in_loop)
                if r.random() < 0.5:
                    lines += [f"{pad}else:"] + self.stmts(ind + 1, r.randint(1, 2), in_loop)
                return lines
            if kind in (16, 17):
                self.note("for-range")
                loopvar = r.choice(INTS)
                form = r.randrange(4)
                rng = {0: f"range({r.randint(1, 4)})", 1: "range(len(c))",
                       2: f"range({r.randint(0, 2)}, {r.randint(2, 5)})",
                       3: f"range({r.randint(4, 6)}, 0, -{r.randint(1, 2)})"}[form]
                return [f"{pad}for {loopvar} in {rng}:"] + self.stmts(ind + 1, r.randint(1, 2), True)
            if kind == 18:
                self.note("while")
                counter = r.choice(INTS)
                return ([f"{pad}{counter} = 0", f"{pad}while {counter} < {r.randint(1, 4)}:",
                         f"{pad}    {counter} += 1"] + self.stmts(ind + 1, r.randint(1, 2), True))
            if kind == 19:
                self.note("for-else")
                return ([f"{pad}for {r.choice(INTS)} in range({r.randint(1, 3)}):"]
                        + self.stmts(ind + 1, 1, True) + [f"{pad}else:"] + self.stmts(ind + 1, 1, in_loop))
            if kind == 20:
                self.note("local-loop")
                if not self.local:
                    return [f"{pad}pass"]
                return [f"{pad}for q in range(4):", f"{pad}    la[q] = la[q] * {self.fexpr(0)}"]
            self.note("nested-loops")
            return ([f"{pad}for {INTS[0]} in range(2):", f"{pad}    for {INTS[1]} in range({INTS[0]} + 1):"]
                    + self.stmts(ind + 2, 1, True))
        finally:
            self.depth -= 1


def _helpers(g: _Gen) -> list[str]:
    lines = []
    for h in range(g.r.randint(0, 2)):
        name, kind = f"helper{h}", g.r.choice(["scalar", "tuple", "branchy"])
        g.helpers.append(name)
        g.helper_kinds.append(kind)
        deco = g.r.choice(["@cuda.jit(device=True)", "@cuda.jit(device=True, inline=True)"])
        if kind == "scalar":
            body = [f"    return u * {round(g.r.uniform(0.5, 2), 2)} + math.sin(v)"]
        elif kind == "tuple":
            body = ["    return u + v, u * v"]
        else:
            body = ["    if u > v:", "        return u - v", "    return v * 0.5"]
        lines += [deco, f"def {name}(u, v):"] + body + [""]
    return lines


def generate_syntax(seed: int) -> SyntaxKernel:
    g = _Gen(seed)
    r = g.r
    name = f"sx_{seed}"
    head = ["import math", "", "import numba", "from numba import cuda, float32, float64, int32, int64", "",
            f"TPB = {N}", ""]
    helpers = _helpers(g)
    if r.random() < 0.8:
        guard = ["    if i >= n:", "        return"]
        g.note("early-return")
    else:
        guard = ["    if i >= len(out):", "        return"]
        g.note("len-guard")
    shared = []
    if r.random() < 0.4:
        # the block's barrier comes before the guard's early return, which every thread then reaches:
        # after it, the barrier would be reached by some threads only, which the engine rightly refuses
        # (undefined behaviour on a GPU), and 4 in 10 kernels were refused for that alone
        g.shared = True
        form = r.choice(["cuda.shared.array(TPB, float64)", "cuda.shared.array(shape=TPB, dtype=float64)",
                         "cuda.shared.array((TPB,), numba.float64)"])
        shared = [f"    sm = {form}", "    sm[cuda.threadIdx.x] = x[min(i, n - 1)]", "    cuda.syncthreads()"]
        g.note("shared-array")
    body = ["    i = cuda.grid(1)"] + shared + guard
    body += [f"    {v} = x[i]" for v in FLOATS] + [f"    {k} = i" for k in INTS]
    if r.random() < 0.4:
        g.local = True
        form = r.choice(["cuda.local.array(4, float64)", "cuda.local.array(shape=4, dtype=float64)",
                         "cuda.local.array((4,), numba.float64)"])
        body += [f"    la = {form}", "    for q in range(4):", "        la[q] = c[q] * x[i]"]
        g.note("local-array")
    if r.random() < 0.2:
        body += ["    (L,) = x.shape", "    m = L - 1 - i"]
        g.note("shape-unpack")
    body += g.stmts(1, r.randint(2, 6))
    body += [f"    out[i] += {' + '.join(FLOATS)}"]
    src = head + helpers + [f"def {name}(out, x, c, idx, n):"] + body + [""]
    return SyntaxKernel(seed, "\n".join(src), name, g.features)


# -------------------------------------------------------------------------------------------- running

@dataclass
class SyntaxResult:
    seed: int
    kind: str                                     # built | refused | numba-rejects | crash
    mode: str | None = None
    reason: str | None = None
    message: str | None = None
    traceback: str | None = None
    source: str | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in vars(self).items() if v is not None}


def _load(sk: SyntaxKernel, work: Path):
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{sk.name}.py"
    path.write_text(sk.source)
    spec = importlib.util.spec_from_file_location(f"harness_syntax_fuzz_{sk.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, sk.name)


def _arguments(backend, seed: int):
    import numpy as np
    from harness.core.activity import Const, Duplicated
    rng = np.random.default_rng(seed)
    arr = backend.asarray
    return (Duplicated(arr(np.zeros(N)), arr(np.ones(N))), Duplicated(arr(rng.uniform(-1, 1, N)), arr(np.zeros(N))),
            Const(arr(rng.uniform(-1, 1, 4))), Const(arr(rng.permutation(N).astype(np.int32))), Const(N))


def check_kernel(sk: SyntaxKernel, backend, work: Path) -> SyntaxResult:
    """Build `sk`'s primal (numba's compile on a compiling backend), forward and reverse plans."""
    import traceback as tb
    from harness.core.errors import EngineInternalError, HarnessError, UnsupportedError
    from harness.engine.runtime.launch import Engine, LaunchConfig
    from harness.fuzz.campaign import refusal_reason
    kernel = _load(sk, work)
    engine = Engine(backend)
    config = LaunchConfig.of(1, N)
    for mode in ("primal", "forward", "reverse"):
        try:
            engine.prepare(kernel, config, _arguments(backend, sk.seed), mode)
        except EngineInternalError as exc:
            return SyntaxResult(sk.seed, "crash", mode, refusal_reason(str(exc)), str(exc),
                                "".join(tb.format_exception(exc)), sk.source)
        except UnsupportedError as exc:
            if mode == "primal" and "numba.cuda itself refuses" in str(exc):
                return SyntaxResult(sk.seed, "numba-rejects", mode, refusal_reason(str(exc)), str(exc))
            return SyntaxResult(sk.seed, "refused", mode, refusal_reason(str(exc)), str(exc))
        except HarnessError as exc:               # the launch contract's errors (ActivityError, ...)
            return SyntaxResult(sk.seed, "refused", mode, refusal_reason(f"{type(exc).__name__}: {exc}"), str(exc))
        except Exception as exc:                  # past the guard: a crash of the guard's own scope
            return SyntaxResult(sk.seed, "crash", mode, f"{type(exc).__name__}: {exc}"[:110], str(exc),
                                "".join(tb.format_exception(exc)), sk.source)
    return SyntaxResult(sk.seed, "built")


@dataclass
class SyntaxTally:
    kernels: int = 0
    kinds: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    crashes: list = field(default_factory=list)

    def add(self, res: SyntaxResult) -> None:
        self.kernels += 1
        self.kinds[res.kind] += 1
        if res.kind in ("refused", "crash", "numba-rejects"):
            self.reasons[f"{res.kind}: {res.reason}"] += 1
        if res.kind == "crash":
            self.crashes.append(res)

    def summary(self, top: int = 15) -> str:
        lines = [f"{self.kernels} kernels: " + ", ".join(f"{k} {v}" for k, v in sorted(self.kinds.items()))]
        lines += [f"  {n:5d}  {why}" for why, n in self.reasons.most_common(top)]
        for c in self.crashes[:5]:
            lines += [f"crash seed {c.seed} ({c.mode}): {c.message}"]
        return "\n".join(lines)


def run_syntax_seeds(seeds, backend, work: Path, log: Path | None = None, progress=None) -> SyntaxTally:
    tally = SyntaxTally()
    for seed in seeds:
        res = check_kernel(generate_syntax(seed), backend, work)
        tally.add(res)
        if log is not None:
            with open(log, "a") as fh:
                fh.write(json.dumps(res.to_json()) + "\n")
        if progress is not None:
            progress(tally)
    return tally


def run_syntax_fuzz(args) -> int:
    """`harness fuzz --syntax`: seeds SEED .. SEED+COUNT-1 on the ptx backend (numba's compile decides
    which kernels are valid), or on the simulator with --backend sim."""
    import tempfile
    import time
    from harness.backends import get_backend, prepare_environment
    name = getattr(args, "backend", None) or "ptx"
    prepare_environment(name)
    backend = get_backend(name)
    started = time.time()
    seeds = range(args.seed, args.seed + args.count)

    def progress(t):
        if t.kernels % 100 == 0:
            print(f"  {t.kernels} kernels: {dict(t.kinds)}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="harness-syntax-fuzz-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        tally = run_syntax_seeds(seeds, backend, work, Path(args.log) if args.log else None, progress)
    print(tally.summary())
    print(f"wall time {time.time() - started:.0f} s on {backend.name}; seeds {args.seed}..{args.seed + args.count - 1}")
    return 1 if tally.crashes else 0
