"""`harness new kernels/file.py:func`: scaffold a case for a kernel, run it once, print the result.

The arguments are read from the kernel's signature and body:

- a parameter that is subscripted, or whose `.shape`/`.size` is read, is an array; its rank is the
  most indices it is subscripted with; one that is only written is initialised to zeros;
- an array used inside another array's index (`x[idx[i]]`) or in a loop's bounds
  (`range(ptr[i], ptr[i + 1])`) is an integer array: Const, `arange` (every index valid);
- a 1-D array indexed only by literals (`c[0]` .. `c[3]`) is as long as the largest plus one;
  one read at `i + k` (`ptr[row + 1]`) is k longer than the launch;
- a scalar compared with a thread index, used in `range(...)`, in an index or in `int(...)` is an
  integer: Const (a bound compared with the thread index gets the launch size, a `range` count 4,
  an index offset 1);
- a parameter passed as the states of numba's random number generator
  (`xoroshiro128p_uniform_float32(states, i)` and the module's other functions) is an
  `rng_states` argument with a state per thread of the launch;
- every other array is a float array, Duplicated; every other scalar a float scalar, Active.

The launch fits the arrays: 64 threads in blocks of 64 (`cuda.grid(2)`: 16 x 16 in blocks of
8 x 8), or blocks of the shared array's size when the kernel declares one with a literal size.
Floats are float64 so that the finite-difference oracle is as sharp as it gets.
"""
from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass, field
from pathlib import Path

from harness.policy import PASSING
from harness.tools.common import ToolError, project_relative, start_backend

N_1D = 64
N_2D = 16
_THREAD_SOURCES = ("grid", "threadIdx", "blockIdx", "blockDim", "gridDim", "gridsize")


@dataclass
class ArgGuess:
    name: str
    kind: str = "scalar"                  # array | scalar
    integer: bool = False
    ndim: int = 1
    read: bool = False
    written: bool = False
    role: str = ""                        # why an integer scalar is one: bound | count | offset
    constant_length: int | None = None    # 1-D and only ever indexed by literals: the largest + 1
    variable_index: bool = False          # indexed by anything but a literal somewhere
    past_end: int = 0                     # read at `i + k` (literal k): k elements past the launch size
    why: list[str] = field(default_factory=list)
    rng: str = ""                         # the numba.cuda.random function it is passed to as states


@dataclass
class KernelGuess:
    name: str
    args: list[ArgGuess]
    dims: int = 1                         # cuda.grid(1) or cuda.grid(2)
    shared_size: int | None = None


def _is_cuda_attr(node, names) -> bool:
    """cuda.grid(...), cuda.threadIdx.x and the like (by the attribute's name)."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        if isinstance(node, ast.Attribute) and node.attr in names:
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return False


def _random_function_name(func) -> str:
    """The name of a numba.cuda.random device function a call names ('' for any other call); by
    name, as the rest of this guess works from the source alone."""
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name if name.startswith("xoroshiro128p_") or name == "init_xoroshiro128p_state" else ""


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def analyse(fn: ast.FunctionDef) -> KernelGuess:
    guesses = {a.arg: ArgGuess(a.arg) for a in fn.args.args}
    guess = KernelGuess(fn.name, list(guesses.values()))
    thread_names: set[str] = set()            # names holding thread indices or sizes

    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and _is_cuda_attr(node.func, ("grid",)) and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == 2:
            guess.dims = 2
        if isinstance(node, ast.Call) and _is_cuda_attr(node.func, ("array",)) and "shared" in ast.unparse(node.func) \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
            guess.shared_size = node.args[0].value
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = node.value
            if _is_cuda_attr(value, _THREAD_SOURCES) or (isinstance(value, ast.Subscript)
                                                          and _is_cuda_attr(value.value, ("shape",))):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    thread_names |= _names(target)
        if isinstance(node, ast.For):
            thread_names |= _names(node.target)

    # Pass 1: which parameters are arrays, their rank, and whether they are read or written.
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in guesses:
            arg = guesses[node.value.id]
            arg.kind = "array"
            index = node.slice
            arg.ndim = max(arg.ndim, len(index.elts) if isinstance(index, ast.Tuple) else 1)
            if isinstance(index, ast.Constant) and type(index.value) is int and index.value >= 0:
                arg.constant_length = max(arg.constant_length or 0, index.value + 1)
            else:
                arg.variable_index = True
                if isinstance(index, ast.BinOp) and isinstance(index.op, ast.Add) \
                        and isinstance(index.right, ast.Constant) and type(index.right.value) is int:
                    arg.past_end = max(arg.past_end, index.right.value)     # ptr[row + 1]
            if isinstance(node.ctx, ast.Store):
                arg.written = True
            else:
                arg.read = True
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) \
                and isinstance(node.target.value, ast.Name) and node.target.value.id in guesses:
            guesses[node.target.value.id].read = True           # += reads too
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in guesses \
                and node.attr in ("shape", "size", "ndim"):
            guesses[node.value.id].kind = "array"
        elif isinstance(node, ast.Call) and _random_function_name(node.func) and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in guesses:
            guesses[node.args[0].id].kind, guesses[node.args[0].id].rng = "array", _random_function_name(node.func)
        elif isinstance(node, ast.Call) and _is_cuda_attr(node.func, ("atomic",)) and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in guesses:
            target = guesses[node.args[0].id]
            target.kind, target.written, target.read = "array", True, True
            if len(node.args) > 1:             # cuda.atomic.add(out, (i, j), v): rank from the index
                index = node.args[1]
                target.ndim = max(target.ndim, len(index.elts) if isinstance(index, ast.Tuple) else 1)

    # Pass 2: which are integers. An array subscripted inside another array's index holds indices;
    # a scalar's role decides its value: an index offset (1) before a range() count (4) before a
    # bound compared with a thread index (the launch size).
    roles: dict[str, set[str]] = {name: set() for name in guesses}
    scalars = {a.name for a in guess.args if a.kind == "scalar"}
    for node in ast.walk(fn):
        index = _index_expression(node, guesses)
        if index is not None:
            for inner in ast.walk(index):
                if isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name) \
                        and guesses.get(inner.value.id, ArgGuess("")).kind == "array":
                    guesses[inner.value.id].integer = True
                    guesses[inner.value.id].why.append("indexes another array")
                elif isinstance(inner, ast.Name) and inner.id in scalars:
                    roles[inner.id].add("offset")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("range", "int"):
            for name in set().union(*(_names(a) for a in node.args)) & scalars if node.args else ():
                roles[name].add("count" if node.func.id == "range" else "offset")
            if node.func.id == "range":       # range(ptr[i], ptr[i + 1]): an array of loop bounds
                for inner in (n for a in node.args for n in ast.walk(a)):
                    if isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name) \
                            and guesses.get(inner.value.id, ArgGuess("")).kind == "array":
                        guesses[inner.value.id].integer = True
                        guesses[inner.value.id].why.append("bounds a loop")
        elif isinstance(node, ast.Compare) and _names(node) & thread_names:
            for name in _names(node) & scalars:
                roles[name].add("bound")
    for name, found in roles.items():
        for role in ("offset", "count", "bound"):
            if role in found:
                guesses[name].integer, guesses[name].role = True, role
                break

    for arg in guess.args:
        if arg.kind == "scalar" and arg.integer:
            arg.why.append({"bound": "compared with a thread index", "count": "a range() count"}
                           .get(arg.role, "used in an index"))
    return guess


def _index_expression(node: ast.AST, guesses: dict) -> ast.AST | None:
    """The index a node applies to a parameter array: a subscript's, or the position argument of
    `cuda.atomic.*(arr, index, value)` (`cuda.atomic.add(y, idx[i], v)` makes idx hold indices)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in guesses:
        return node.slice
    if isinstance(node, ast.Call) and _is_cuda_attr(node.func, ("atomic",)) and len(node.args) >= 2 \
            and isinstance(node.args[0], ast.Name) and node.args[0].id in guesses:
        return node.args[1]
    return None


def find_function(path: Path, name: str) -> ast.FunctionDef:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError) as exc:
        raise ToolError(f"cannot read {path}: {exc}") from None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    known = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    raise ToolError(f"{path} has no top-level function '{name}' (it has: {', '.join(known) or 'none'})")


def case_yaml(guess: KernelGuess, kernel_ref: str, case_id: str) -> str:
    """The case file text, one argument per line with the reason for its activity."""
    n = N_2D if guess.dims == 2 else N_1D
    if guess.dims == 2:
        launch = f"{{threads: [{n}, {n}], block: [8, 8]}}"
        threads = n * n
    else:
        block = guess.shared_size if guess.shared_size and guess.shared_size <= 1024 else n
        threads = max(n, block)
        launch = f"{{threads: {threads}, block: {block}}}"
    width = max((len(a.name) for a in guess.args), default=1) + 1
    lines = [f"id: {case_id}",
             f'title: "{kernel_ref} (scaffolded by harness new: check the arguments, then say what it tests)"',
             f"kernel: {kernel_ref}", f"launch: {launch}", "args:"]
    for arg in guess.args:
        key = f"{arg.name}:".ljust(width)
        if arg.rng:
            body = f"{{rng_states: {{count: {threads}, seed: 1}}}}"
            why = f"numba's generator states (passed to {arg.rng}), one per thread"
        elif arg.kind == "array":
            shape = [n] * arg.ndim if guess.dims == 2 or arg.ndim > 1 else [max(n, guess.shared_size or 0)]
            if guess.dims == 2 and arg.ndim == 1:
                shape = [n]
            if arg.ndim == 1 and arg.past_end > 0:
                shape = [shape[0] + arg.past_end]   # ptr[row + 1] for every row: one longer
            if arg.ndim == 1 and arg.constant_length and not arg.variable_index:
                shape = [arg.constant_length]   # c[0] .. c[3] only: 4 long, as the kernel reads it
            if arg.integer:
                body = f"{{array: {{shape: {shape}, dtype: int32, init: arange}}, activity: const}}"
                why = f"integer array ({', '.join(dict.fromkeys(arg.why))})"
            else:
                init = "zeros" if arg.written and not arg.read else "normal"
                body = f"{{array: {{shape: {shape}, dtype: float64, init: {init}}}, activity: duplicated}}"
                why = "float array" + (", written only" if init == "zeros" else "")
        elif arg.integer:
            value = {"bound": n, "count": 4}.get(arg.role, 1)
            body = f"{{scalar: {{value: {value}, dtype: int32}}, activity: const}}"
            why = f"integer scalar ({', '.join(dict.fromkeys(arg.why))})"
        else:
            body = "{scalar: {value: 1.5, dtype: float64}, activity: active}"
            why = "float scalar"
        lines.append(f"  {key} {body}   # {why}")
    lines.append("modes: [forward, reverse]")
    return "\n".join(lines) + "\n"


def add_new_parser(subparsers) -> None:
    p = subparsers.add_parser("new", help="scaffold a case for a kernel, run it once and print the result",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernel", metavar="FILE.py:FUNCTION", help="the kernel, e.g. kernels/elementwise.py:scale")
    p.add_argument("-o", "--output", metavar="CASE.yaml",
                   help="where to write the case (default: cases/ID.yaml, ID from the function's name)")
    p.add_argument("--id", help="the case id (default: the function's name with - for _, "
                                "leading underscores dropped)")
    p.add_argument("--backend", default="auto", choices=("auto", "sim", "ptx", "cuda"),
                   help="where the first run goes (default: %(default)s)")
    p.add_argument("--force", action="store_true", help="overwrite an existing case file")
    p.add_argument("--no-run", action="store_true", help="only write the case file")
    p.set_defaults(func=run_new)


def run_new(args) -> int:
    root = Path.cwd()
    file_text, sep, function = args.kernel.partition(":")
    if not sep or not function:
        print(f"harness new: error: expected FILE.py:FUNCTION, got {args.kernel!r}")
        return 2
    kernel_path = Path(file_text)
    try:
        if not (root / kernel_path).is_file():
            raise ToolError(f"no kernel file {file_text}")
        kernel_ref = f"{project_relative(root / kernel_path, root)}:{function}"
        guess = analyse(find_function(root / kernel_path, function))
        # a private kernel's leading underscore would start the id with '-', which no id may
        case_id = args.id or function.lstrip("_").replace("_", "-")
        output = Path(args.output) if args.output else Path("cases") / f"{case_id}.yaml"
        if (root / output).exists() and not args.force:
            raise ToolError(f"{output} exists (use --force to overwrite, or -o for another file)")
    except ToolError as exc:
        print(f"harness new: error: {exc}")
        return 2
    text = case_yaml(guess, kernel_ref, case_id)
    (root / output).parent.mkdir(parents=True, exist_ok=True)
    (root / output).write_text(text, encoding="utf-8")
    print(f"wrote {output}:\n")
    print(text)
    if args.no_run:
        return 0
    return run_once(output, root, args.backend)


def run_once(case_file: Path, root: Path, backend_name: str) -> int:
    """Run every run of the new case once and print each verdict (a failure in full)."""
    from harness.backends import resolve
    backend = resolve(backend_name)
    start_backend(backend)
    from harness.report.explain import explain_outcome
    from harness.execution.runner import Runner
    from harness.tools.common import load_runs
    try:
        _, runs = load_runs(str(case_file), root, backend)
    except ToolError as exc:
        print(f"harness new: the scaffolded case does not load: {exc}")
        return 1
    runner = Runner(root, backend)
    bad = 0
    for run in runs:
        outcome = runner.execute(run)
        print(f"{outcome.state:<11} {run.run_id} on {backend}: {outcome.message[:160]}")
        for mode, source in outcome.sources.items():
            print(f"            generated {mode} kernel: {project_relative(Path(source), root)}")
        if outcome.state not in PASSING:
            bad += 1
            print("\n".join("    " + line for line in explain_outcome(outcome).splitlines()))
    print(f"\nnext: edit {case_file} (title, tags, what to expect), then: pytest {case_file} --backend {backend}")
    return 1 if bad else 0
