"""`harness reduce CASE::RUN`: shrink a failing run to a minimal reproducer that fails the same way.

"The same way" is the run's signature: its state, the set of oracles that fail and the error type
(for example `FAIL` with `fd-reverse` failing, or `ERROR` with a `KernelError`). Starting from the
run as it is (its one mode and dtype, its variant's overrides applied), the reducer tries smaller
candidates and keeps each one whose run still has that signature:

1. shapes and launch sizes: every array extent (and the thread counts and integer scalars equal to
   it) shrunk towards 1;
2. statements: each deleted (an emptied block keeps a `pass`), an `if` replaced by its body, a
   `for ... in range(...)` shortened to one or two trips;
3. sub-expressions: an operation replaced by one of its operands, a call by one of its arguments,
   a conditional expression by one of its branches;
4. arguments: a parameter the kernel no longer uses is dropped from the signature and the case;

over and over until a whole round changes nothing. Each candidate is a kernel file and a case
file under .cache/harness/reduce/, run in this process. The result is written as a new kernel
file and YAML case (default folder cases/reduced/). The same works on any case file in the
project, such as the kernel fuzzer's findings (a YAML case beside its kernel file).

With `--mutant NAME` every run, the first included, happens with that planted bug in the engine
(harness/selftest/mutants.py): the reproducer then fails under the mutant and passes without it.
"""
from __future__ import annotations

import argparse
import ast
import copy
import contextlib
import shutil
import time
from dataclasses import dataclass, field as dc_field
from pathlib import Path
from typing import Callable, Iterator

import yaml

from harness.core.paths import REDUCED_CASES, reduce_work_dir
from harness.policy import PASSING
from harness.tools.common import ToolError, case_file_of, load_runs, project_relative, start_backend

DEFAULT_OUTPUT = REDUCED_CASES


# ----------------------------------------------------------------------------- the signature

@dataclass(frozen=True)
class Signature:
    state: str
    failing: frozenset[str]
    error: str | None

    @staticmethod
    def of(outcome) -> "Signature":
        return Signature(outcome.state, frozenset(v.name for v in outcome.oracles if v.verdict == "fail"),
                         outcome.error.type if outcome.error else None)

    def __str__(self) -> str:
        parts = [self.state]
        if self.failing:
            parts.append("failing " + ", ".join(sorted(self.failing)))
        if self.error:
            parts.append(f"error {self.error}")
        return "; ".join(parts)


# ----------------------------------------------------------------------------- the reproducer

@dataclass
class Candidate:
    """A kernel function (as an AST), the module's other functions (device functions, a nested
    AD's function: shrunk like the kernel) and the case data (as loaded YAML) that run them."""
    function: ast.FunctionDef
    case: dict
    helpers: list = dc_field(default_factory=list)

    def copy(self) -> "Candidate":
        return Candidate(copy.deepcopy(self.function), copy.deepcopy(self.case), copy.deepcopy(self.helpers))

    def root(self) -> ast.Module:
        """Every function the edits may change, under one root: paths into it reach the candidate's own
        nodes (the module is a fresh wrapper, its functions are not copies)."""
        return ast.Module(body=[self.function, *self.helpers], type_ignores=[])

    def kernel_lines(self) -> int:
        return len(ast.unparse(self.function).splitlines())

    def size(self) -> tuple[int, int, int]:
        """What the reducer makes smaller: AST nodes, then launch size, then arguments."""
        return (sum(1 for _ in ast.walk(self.root())), _launch_size(self.case), len(self.case.get("args", {})))


def _launch_size(case: dict) -> int:
    threads = (case.get("launch") or {}).get("threads") or (case.get("launch") or {}).get("grid") or 1
    total = 1
    for extent in threads if isinstance(threads, list) else [threads]:
        total *= int(extent) if isinstance(extent, int) else 1
    return total


class ModuleContext:
    """The kernel's module, less the kernel: the imports and helpers a reduced kernel may still
    need. Only those its code still names are written out with it."""

    def __init__(self, path: Path, function: str):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        self.nodes = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == function)
                      and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        kernels = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
        if not kernels:
            raise ToolError(f"{path} has no top-level function '{function}'")
        self.function = kernels[0]

    def helpers(self) -> list[ast.FunctionDef]:
        """The module's other functions, which a candidate shrinks too (copies)."""
        return [copy.deepcopy(n) for n in self.nodes if isinstance(n, ast.FunctionDef)]

    def source(self, function: ast.FunctionDef, header: str = "", helpers=()) -> str:
        shrunk = {h.name: h for h in helpers}
        wanted = _names_in(function)
        kept: list[ast.stmt] = []
        changed = True
        while changed:                         # helpers may name further helpers
            changed = False
            for node in self.nodes:
                if node not in kept and _defines(node) & wanted:
                    kept.append(node)
                    wanted |= _names_in(node)
                    changed = True
        kept.sort(key=self.nodes.index)
        kept = [shrunk.get(n.name, n) if isinstance(n, ast.FunctionDef) else n for n in kept]
        body = [ast.unparse(_pruned_import(n, wanted) if isinstance(n, (ast.Import, ast.ImportFrom)) else n)
                for n in kept]
        text = "\n".join(body) + "\n\n\n" + ast.unparse(function) + "\n"
        return (header + text) if header else text


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _defines(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return set().union(*(_names_in(t) for t in targets))
    return set()


def _pruned_import(node, wanted: set[str]):
    node = copy.deepcopy(node)
    node.names = [a for a in node.names if (a.asname or a.name).split(".")[0] in wanted]
    return node


# ----------------------------------------------------------------------------- edits

Edit = tuple[str, Callable[[Candidate], bool]]     # (what it does, apply in place; False: not applicable)


def _child(node: ast.AST, step):
    field, index = step
    value = getattr(node, field)
    return value if index is None else value[index]


def _locate(root: ast.AST, path) -> ast.AST:
    for step in path:
        root = _child(root, step)
    return root


def _replace(root: ast.AST, path, new: ast.AST) -> None:
    parent = _locate(root, path[:-1])
    field, index = path[-1]
    if index is None:
        setattr(parent, field, new)
    else:
        getattr(parent, field)[index] = new


def _paths(node: ast.AST, path=()) -> Iterator[tuple[tuple, ast.AST]]:
    """Every node below `node` with its path of (field, index) steps, parents before children."""
    for field, value in ast.iter_fields(node):
        if isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.AST):
                    step = path + ((field, i),)
                    yield step, item
                    yield from _paths(item, step)
        elif isinstance(value, ast.AST):
            step = path + ((field, None),)
            yield step, value
            yield from _paths(value, step)


def _statement_paths(root: ast.Module) -> list[tuple]:
    found = [p for p, n in _paths(root) if isinstance(n, ast.stmt) and len(p) > 1
             and p[-1][0] in ("body", "orelse", "finalbody")]      # never a whole function
    return list(reversed(found))           # later statements first: earlier ones feed them


def size_edits(candidate: Candidate) -> list[Edit]:
    """Shrink each array extent (thread counts and integer scalars equal to it follow)."""
    extents = set()
    for spec in (candidate.case.get("args") or {}).values():
        array = spec.get("array") if isinstance(spec, dict) else None
        if isinstance(array, dict) and isinstance(array.get("shape"), list) and not _explicit_values(array):
            extents |= {e for e in array["shape"] if isinstance(e, int) and e > 1}
    edits = []
    for extent in sorted(extents, reverse=True):
        for smaller in sorted({1, 2, 4, extent // 2} - {extent}):
            if smaller < extent:
                edits.append((f"extent {extent} -> {smaller}", _resize(extent, smaller)))
    return edits


def _explicit_values(array: dict) -> bool:
    init = array.get("init")
    return isinstance(init, dict) and "values" in init


def _resize(old: int, new: int) -> Callable[[Candidate], bool]:
    def apply(candidate: Candidate) -> bool:
        changed = False
        for spec in (candidate.case.get("args") or {}).values():
            if not isinstance(spec, dict):
                continue
            array = spec.get("array")
            if isinstance(array, dict) and isinstance(array.get("shape"), list):
                if _explicit_values(array) and old in array["shape"]:
                    return False                      # explicit values fix the extent
                shape = [new if e == old else e for e in array["shape"]]
                changed |= shape != array["shape"]
                array["shape"] = shape
            scalar = spec.get("scalar")
            if isinstance(scalar, dict) and isinstance(scalar.get("value"), int) and scalar["value"] == old \
                    and "int" in str(scalar.get("dtype", "")):
                scalar["value"] = new
        launch = candidate.case.get("launch") or {}
        for key in ("threads", "grid"):
            value = launch.get(key)
            if isinstance(value, int) and value == old:
                launch[key] = new
            elif isinstance(value, list):
                launch[key] = [new if e == old else e for e in value]
        threads, block = launch.get("threads"), launch.get("block")
        if threads is not None and block is not None:    # a block no larger than the launch
            t = threads if isinstance(threads, list) else [threads]
            b = block if isinstance(block, list) else [block]
            if len(t) == len(b):
                fitted = [min(x, y) for x, y in zip(t, b)]
                launch["block"] = fitted if isinstance(block, list) else fitted[0]
        return changed
    return apply


def statement_edits(candidate: Candidate) -> list[Edit]:
    edits: list[Edit] = []
    for path in _statement_paths(candidate.root()):
        node = _locate(candidate.root(), path)
        text = ast.unparse(node).splitlines()[0][:60]
        edits.append((f"delete `{text}`", _delete(path)))
        if isinstance(node, ast.If):
            edits.append((f"keep only the body of `{text}`", _splice(path, "body")))
            if node.orelse:
                edits.append((f"keep only the else of `{text}`", _splice(path, "orelse")))
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and getattr(node.iter.func, "id", "") == "range":
            for trips in (1, 2):
                edits.append((f"loop `{text}` {trips} time(s)", _shorten(path, trips)))
    return edits


def _delete(path) -> Callable[[Candidate], bool]:
    def apply(candidate: Candidate) -> bool:
        parent = _locate(candidate.root(), path[:-1])
        field, index = path[-1]
        body = getattr(parent, field)
        del body[index]
        if not body and field == "body":
            body.append(ast.Pass())
        return True
    return apply


def _splice(path, branch: str) -> Callable[[Candidate], bool]:
    def apply(candidate: Candidate) -> bool:
        parent = _locate(candidate.root(), path[:-1])
        field, index = path[-1]
        body = getattr(parent, field)
        body[index:index + 1] = getattr(body[index], branch) or [ast.Pass()]
        return True
    return apply


def _shorten(path, trips: int) -> Callable[[Candidate], bool]:
    def apply(candidate: Candidate) -> bool:
        loop = _locate(candidate.root(), path)
        new = ast.Call(func=ast.Name("range", ast.Load()), args=[ast.Constant(trips)], keywords=[])
        if ast.unparse(loop.iter) == ast.unparse(new):
            return False
        loop.iter = new
        return True
    return apply


def expression_edits(candidate: Candidate) -> list[Edit]:
    """An expression replaced by a part of itself (never a store target)."""
    edits: list[Edit] = []
    for path, node in _paths(candidate.root()):
        if not isinstance(node, ast.expr) or isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            continue
        if isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            parts = [node.operand]
        elif isinstance(node, ast.IfExp):
            parts = [node.body, node.orelse]
        elif isinstance(node, ast.BoolOp):
            parts = list(node.values)
        elif isinstance(node, ast.Call) and not _is_cuda_call(node) and not _is_device_ad_call(node):
            parts = [a for a in node.args if not isinstance(a, ast.Starred)]
        else:
            continue
        text = ast.unparse(node)[:50]
        for part in parts:
            edits.append((f"`{text}` -> `{ast.unparse(part)[:40]}`", _substitute(path, part)))
    return edits


def _is_cuda_call(node: ast.Call) -> bool:
    return "cuda." in ast.unparse(node.func)


# Device-side AD calls: their arguments are not values the call computes from, so replacing
# `Duplicated(out, dout)` by `dout` (or `autodiff(...)` by `f`) changes what is differentiated and
# reduces towards another bug that happens to fail the same way.
DEVICE_AD_API = frozenset({"autodiff", "Active", "Const", "Duplicated", "DuplicatedNoNeed",
                           "BatchDuplicated", "Forward", "Reverse"})


def _is_device_ad_call(node: ast.Call) -> bool:
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    return name in DEVICE_AD_API


def _substitute(path, part: ast.expr) -> Callable[[Candidate], bool]:
    replacement = copy.deepcopy(part)

    def apply(candidate: Candidate) -> bool:
        _replace(candidate.root(), path, copy.deepcopy(replacement))
        return True
    return apply


def argument_edits(candidate: Candidate) -> list[Edit]:
    used = _names_in(ast.Module(body=candidate.function.body, type_ignores=[]))
    return [(f"drop argument {a.arg}", _drop_argument(a.arg)) for a in candidate.function.args.args
            if a.arg not in used]


def _drop_argument(name: str) -> Callable[[Candidate], bool]:
    def apply(candidate: Candidate) -> bool:
        candidate.function.args.args = [a for a in candidate.function.args.args if a.arg != name]
        args = candidate.case.get("args") or {}
        if name in args:
            del args[name]
        return True
    return apply


PASSES = (("shapes and launch", size_edits), ("statements", statement_edits),
          ("sub-expressions", expression_edits), ("arguments", argument_edits))


def _reads_unassigned(candidate: Candidate) -> bool:
    """Whether a function of the candidate reads a local before any statement assigns it (in source
    order): deleting `acc = ...` leaves `acc = acc * 0.3 + ...` reading garbage in a translation
    (Warp and Taichi declare it uninitialised), a reducer-made bug that fails "the same way" by chance."""
    import builtins
    module_names = set(dir(builtins))
    for fn in candidate.root().body:
        local = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        assigned = {a.arg for a in fn.args.args}
        for node in _in_source_order(fn):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Store):
                    assigned.add(node.id)
                elif node.id in local and node.id not in assigned and node.id not in module_names:
                    return True
    return False


def _in_source_order(fn: ast.FunctionDef):
    """The function's names, a statement's right-hand side before its targets (`x = x + 1` reads first)."""
    def visit(node):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            yield from visit(node.value) if node.value is not None else ()
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(node, ast.AugAssign) and isinstance(t, ast.Name):
                    yield ast.Name(t.id, ast.Load())
                yield from visit(t)
        elif isinstance(node, ast.For):
            yield from visit(node.iter)
            yield from visit(node.target)
            for child in node.body + node.orelse:
                yield from visit(child)
        else:
            if isinstance(node, ast.Name):
                yield node
            for child in ast.iter_child_nodes(node):
                yield from visit(child)
    for stmt in fn.body:
        yield from visit(stmt)


# ----------------------------------------------------------------------------- the reducer

class Reducer:
    def __init__(self, root: Path, run, runner, module: ModuleContext, case: dict, *,
                 log: Callable[[str], None] = print, budget: int = 600, deadline_s: float = 900):
        self.root, self.run, self.runner, self.module = root, run, runner, module
        self.log = log
        self.budget, self.deadline = budget, time.time() + deadline_s
        self.tried = self.primal_checks = 0
        self.work = reduce_work_dir(root) / f"{run.case.id}-{int(time.time() * 1000) % 10**8}"
        self.work.mkdir(parents=True, exist_ok=True)
        self.best = Candidate(copy.deepcopy(module.function), case, module.helpers())
        self.target: Signature | None = None

    def evaluate(self, candidate: Candidate):
        """The outcome of the candidate's one run (None when its case does not even load)."""
        from harness.cases import expand_runs, load_case_file
        from harness.core.errors import CaseError
        self.tried += 1
        stem = f"c{self.tried:04d}"
        kernel = self.work / f"{stem}.py"
        kernel.write_text(self.module.source(ast.fix_missing_locations(candidate.function),
                                             helpers=[ast.fix_missing_locations(h) for h in candidate.helpers]),
                          encoding="utf-8")
        data = copy.deepcopy(candidate.case)
        data["kernel"] = f"{project_relative(kernel, self.root)}:{candidate.function.name}"
        case_file = self.work / f"{stem}.yaml"
        case_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        try:
            runs = [r for case in load_case_file(case_file, self.root)       # the run's own engine (an adapter's too)
                    for r in expand_runs(case, self.run.backend, (getattr(self.run, "engine", "bundled"),))]
        except (CaseError, ValueError, TypeError):
            return None
        return self.runner.execute(runs[0]) if runs else None

    def _numba_primal_runs(self, candidate: Candidate) -> bool:
        """Whether the candidate's primal runs as numba.cuda does on the simulator. Warp's and
        Taichi's CPU devices do not check bounds, so through an adapter an edit that indexes past an
        array (`y[(i + 1) % n]` -> `y[i + 1]`) can keep the failure while the kernel stops being one:
        such a candidate is refused. The bundled engine's own runs check bounds already."""
        if getattr(self.run, "engine", "bundled") == "bundled":
            return True
        from harness.cases import expand_runs, load_case_file
        from harness.policy import State
        self.primal_checks += 1
        stem = f"p{self.primal_checks:04d}"         # a file of its own: kernels load once per path
        kernel = self.work / f"{stem}.py"
        kernel.write_text(self.module.source(ast.fix_missing_locations(candidate.function),
                                             helpers=[ast.fix_missing_locations(h) for h in candidate.helpers]),
                          encoding="utf-8")
        data = copy.deepcopy(candidate.case)
        data["kernel"] = f"{project_relative(kernel, self.root)}:{candidate.function.name}"
        data["modes"] = ["primal"]
        data.pop("engines", None)
        case_file = self.work / f"{stem}.yaml"
        case_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        runs = [r for case in load_case_file(case_file, self.root) for r in expand_runs(case, self.run.backend, ("bundled",))]
        return bool(runs) and self.runner.execute(runs[0]).state != State.ERROR

    def start(self) -> Signature:
        outcome = self.evaluate(self.best)
        if outcome is None:
            raise ToolError("the run, restated as a one-run case, does not load")
        self.target = Signature.of(outcome)
        return self.target

    def reduce(self) -> Candidate:
        for round_number in range(1, 9):
            accepted = 0
            for name, edits_of in PASSES:
                accepted += self._pass(name, edits_of)
            self.log(f"round {round_number}: {accepted} change(s) kept; kernel {self.best.kernel_lines()} lines, "
                     f"launch {_launch_size(self.best.case)} thread(s), {len(self.best.case.get('args', {}))} "
                     f"argument(s); {self.tried} candidates run")
            if not accepted or self._out_of_budget():
                break
        return self.best

    def _out_of_budget(self) -> bool:
        return self.tried >= self.budget or time.time() > self.deadline

    def _pass(self, name: str, edits_of) -> int:
        accepted = 0
        progress = True
        while progress and not self._out_of_budget():
            progress = False
            for description, apply in edits_of(self.best):
                if self._out_of_budget():
                    break
                candidate = self.best.copy()
                try:
                    if not apply(candidate):
                        continue
                except (IndexError, AttributeError, TypeError):
                    continue
                if candidate.size() >= self.best.size() or _reads_unassigned(candidate):
                    continue
                outcome = self.evaluate(candidate)
                if outcome is not None and Signature.of(outcome) == self.target and self._numba_primal_runs(candidate):
                    self.best = candidate
                    accepted += 1
                    self.log(f"  kept ({name}): {description}")
                    progress = True
                    break                          # the edits are of the old tree: list them anew
        return accepted

    def cleanup(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)


def one_run_case(case_file: Path, run) -> dict:
    """The run restated as a case of its own: the variant's keys applied (as the loader does, one
    level deep), its one mode and dtype, no variants."""
    raw = yaml.safe_load(case_file.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ToolError(f"{case_file}: not a case mapping")
    variants = raw.pop("variants", None) or {}
    if run.case.variant:
        raw.update(variants.get(run.case.variant) or {})
    raw["modes"] = [run.mode]
    if run.dtype:
        raw["dtypes"] = [run.dtype]
    else:
        raw.pop("dtypes", None)
    return raw


def write_reproducer(best: Candidate, module: ModuleContext, root: Path, output: Path, run, target: Signature,
                     mutant: str | None) -> tuple[Path, Path]:
    case_id = f"{run.case.id}-{run.name.replace('@', '-')}-reduced"
    output = root / output
    output.mkdir(parents=True, exist_ok=True)
    kernel_path = output / f"{case_id.replace('-', '_')}.py"
    case_path = output / f"{case_id}.yaml"
    origin = f"{run.run_id}" + (f" under the planted bug {mutant}" if mutant else "")
    header = (f'"""Reduced by `harness reduce` from {origin}: {target}."""\n')
    kernel_path.write_text(module.source(ast.fix_missing_locations(best.function), header, best.helpers), encoding="utf-8")
    data = copy.deepcopy(best.case)
    data["id"] = case_id
    data["title"] = f"reduced from {run.run_id}: {target}"
    data["kernel"] = f"{project_relative(kernel_path, root)}:{best.function.name}"
    note = [f"# Reduced by `harness reduce` from {origin}.",
            f"# It fails the same way: {target}."]
    if mutant:
        note.append("# Without the planted bug it passes: it is a probe for that mutant.")
    case_path.write_text("\n".join(note) + "\n" + case_text(data), encoding="utf-8")
    return kernel_path, case_path


def case_text(data: dict) -> str:
    """YAML as the hand-written cases look: top-level keys in block style, one line per argument,
    everything below that in flow style."""
    def flow(value) -> str:
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10**6).strip()
    lines = []
    for key, value in data.items():
        if key == "args" and isinstance(value, dict):
            lines.append("args:")
            width = max((len(str(name)) for name in value), default=0) + 1
            lines += [f"  {(str(name) + ':').ljust(width)} {flow(spec)}" for name, spec in value.items()]
        elif isinstance(value, (dict, list)):
            lines.append(f"{key}: {flow(value)}")
        else:
            lines.append(yaml.safe_dump({key: value}, default_flow_style=False, width=10**6).strip())
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- command line

def add_reduce_parser(subparsers) -> None:
    p = subparsers.add_parser("reduce", help="shrink a failing run to a minimal reproducer that fails the same way",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="CASE::RUN", help="the failing run, e.g. cases/math-heavy.yaml::reverse-float64")
    p.add_argument("-o", "--output", default=str(DEFAULT_OUTPUT), metavar="DIR",
                   help="folder (inside the project) for the reduced kernel and case (default: %(default)s)")
    p.add_argument("--backend", default="sim", choices=("sim", "ptx", "cuda"),
                   help="where the candidates run (default: %(default)s)")
    p.add_argument("--mutant", metavar="NAME", help="run everything with this planted engine bug "
                   "(harness mutate --list names them)")
    p.add_argument("--budget", type=int, default=600, help="most candidates to run (default: %(default)s)")
    p.add_argument("--max-seconds", type=float, default=900, help="stop after this long (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=30, help="seconds one candidate may run (default: %(default)s)")
    p.add_argument("--keep-work", action="store_true", help="keep every candidate under .cache/harness/reduce/")
    p.set_defaults(func=run_reduce)


def run_reduce(args) -> int:
    root = Path.cwd()
    if "::" not in args.run:
        print("harness reduce: error: name one run, CASE::RUN (harness show CASE lists them)")
        return 2
    output = Path(args.output)
    if not (root / output).resolve().is_relative_to(root.resolve()):
        print(f"harness reduce: error: --output {output} is outside the project (a case names its kernel "
              "by a project-relative path)")
        return 2
    try:
        case_file = case_file_of(args.run.partition("::")[0], root)
        _, runs = load_runs(args.run, root, args.backend)
        run = runs[0]
        if run.case.kernel_for(run.engine) != run.case.kernel or run.case.kernel is None:
            raise ToolError(f"{args.run} runs a native {run.engine} kernel (engines.{run.engine}.kernel): the "
                            "reducer shrinks numba.cuda kernels")
        module = ModuleContext(root / run.case.kernel.path, run.case.kernel.function)
        case = one_run_case(case_file, run)
    except ToolError as exc:
        print(f"harness reduce: error: {exc}")
        return 2
    start_backend(args.backend)
    from harness.execution.runner import Runner
    with _planted(args.mutant) as planted:
        if planted is False:
            return 2
        runner = Runner(root, args.backend, timeout_s=args.timeout, seams=planted)   # engines built with the mutant
        reducer = Reducer(root, run, runner, module, case, budget=args.budget, deadline_s=args.max_seconds)
        try:
            target = reducer.start()
            print(f"reducing {run.run_id}" + (f" under the planted bug {args.mutant}" if args.mutant else "")
                  + f" on {args.backend}: {target}")
            print(f"start: kernel {reducer.best.kernel_lines()} lines, launch {_launch_size(case)} thread(s), "
                  f"{len(case.get('args', {}))} argument(s)")
            if target.error == "LaunchTimeoutError":       # a slow machine, not a failure to keep
                print(f"harness reduce: error: {run.run_id} ran past --timeout {args.timeout:g} s; "
                      "give it more time (--timeout)")
                return 2
            if target.state in PASSING:
                print(f"harness reduce: error: {run.run_id} does not fail ({target.state}); nothing to reduce")
                return 2
            best = reducer.reduce()
        except ToolError as exc:
            print(f"harness reduce: error: {exc}")
            return 2
        finally:
            if not args.keep_work:
                reducer.cleanup()
    kernel_path, case_path = write_reproducer(best, module, root, Path(args.output), run, target, args.mutant)
    print(f"\nreduced in {reducer.tried} candidate runs: kernel {best.kernel_lines()} lines, "
          f"launch {_launch_size(best.case)} thread(s), {len(best.case.get('args', {}))} argument(s)")
    print(f"wrote {project_relative(kernel_path, root)} and {project_relative(case_path, root)}:\n")
    print(ast.unparse(best.function))
    shown = project_relative(case_path, root)
    if args.mutant:
        print(f"\nit fails this way only with the planted bug {args.mutant} in the engine; without it, "
              f"`harness show {shown} --backend {args.backend}` shows it pass")
    elif "cases" in Path(shown).parts:
        print(f"\nreproduce: pytest {shown} --backend {args.backend}")
    else:
        print(f"\nreproduce: harness show {shown} --backend {args.backend}")
    return 0


@contextlib.contextmanager
def _planted(name: str | None):
    """The mutant's seams (its public entry point, harness.selftest.mutants.get_mutant; None without a
    mutant, False for an unknown one), with the simulator's threads interleaved for the race
    mutants as the mutation campaign does."""
    if not name:
        yield None
        return
    from harness.selftest.mutants import get_mutant, interleaved_threads
    try:
        mutant = get_mutant(name)
    except KeyError as exc:
        print(f"harness reduce: error: {exc.args[0]}")
        yield False
        return
    threads = interleaved_threads() if getattr(mutant, "race", False) else contextlib.nullcontext()
    with threads:
        yield mutant.seams()           # the engine parts with the bug planted (harness/engine/seams.py)
