"""From a campaign's findings to distinct, reduced, upstream-ready reports.

`harness fuzz --triage FINDINGS_DIR [--log LOG] [-o OUT]`:

1. every saved finding (fuzz-<seed>-<engine>-<kind>.yaml) with its failing run (from its
   description) is grouped: findings of one engine, mode and failing oracle whose kernels could be the
   same known bugs (harness/fuzz/known.py: the constructs each class requires) are one group; a
   finding that matches no known class is a group with the others of its exact first signature
   (engine, mode, oracle, the constructs of the unreduced kernel);
2. the smallest `sample` kernels of each group (new groups first, then the largest) are reduced
   (harness/tools/reduce.py, through the finding's own engine; device functions shrink too); the
   reduced kernel's constructs make the final signature (engine, mode, failing oracle, the constructs
   left after reduction): findings that reduce to the same signature are one finding, and a group's
   members not reduced are counted with its first sample's signature ("presumed"). A campaign of a
   thousand findings falls into a few dozen groups, where reducing each finding took minutes apiece;
   after `total_s` the groups left are listed unreduced;
3. each distinct finding is written to OUT as a case (with that engine's xfail "found by fuzzing;
   not yet reported") beside its kernel, with the known classes its reduced signature still matches,
   and, for Warp and Taichi, a plain reproducer script (harness/fuzz/reproducer.py), which is run in
   a fresh interpreter without the harness on its path to confirm it prints a wrong derivative;
4. OUT/campaign.md lists the distinct findings per engine and construct with their minimal kernels,
   the refusal counts and the throughput (from LOG).
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.core.errors import plain_text
from harness.policy import FIXED

_FOUND = re.compile(r"Found: (\S+?)(?:@(\w+))?: ")


def constructs(source: str, function: str = "kernel") -> list[str]:
    """The constructs a kernel module's code uses (the signature's last part)."""
    tree = ast.parse(source)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.While):
            names.add("while")
        elif isinstance(node, ast.For):
            it = node.iter
            if "cuda.gridsize" in ast.unparse(it):
                continue        # the grid-stride loop is "grid-stride" (below), not a dynamic loop of the body:
                                # the known classes of loops (Warp's replayed dynamic loops) need one in the body
            dynamic = isinstance(it, ast.Call) and any(not isinstance(a, ast.Constant) for a in it.args)
            names.add("dynamic-loop" if dynamic else "static-loop")
            if isinstance(it, ast.Call) and len(it.args) == 3:
                names.add("stepped-range")
        elif isinstance(node, ast.Break):
            names.add("break")
        elif isinstance(node, ast.Continue):
            names.add("continue")
        elif isinstance(node, ast.If):
            names.add("if")
        elif isinstance(node, ast.IfExp):
            names.add("ternary")
        elif isinstance(node, ast.Return) and node.value is None:
            names.add("early-return")
        elif isinstance(node, ast.Call):
            text = ast.unparse(node.func)
            if text.startswith("cuda.atomic."):
                names.add(f"atomic-{text.rsplit('.', 1)[1]}")
            elif text.startswith("math."):
                names.add(text.removeprefix("math."))
            elif text in ("min", "max", "abs"):
                names.add(text)
            elif text == "cuda.gridsize":
                names.add("grid-stride")
            elif isinstance(node.func, ast.Name) and text not in ("range", "float", "int"):
                names.add("device-function")
        elif isinstance(node, ast.AugAssign):
            names.add("in-place")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            names.add("pow")
    if _stored_arrays(tree) & _loaded_arrays(tree):
        names.add("overwrite")
    if any(isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
           and ast.unparse(node.value.func).startswith("cuda.atomic.") for node in ast.walk(tree)):
        names.add("atomic-old")               # an atomic's old value is used (a ticket)
    return sorted(names)


def _stored_arrays(tree: ast.AST) -> set:
    """Arrays with an element assigned (`y[i] = ...`)."""
    return {t.value.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)}


def _loaded_arrays(tree: ast.AST) -> set:
    """Arrays with an element read (`... = y[i]`): with a store into the same array, the kernel
    overwrites what it read (the adjoint must read the value from before the store)."""
    return {node.value.id for node in ast.walk(tree) if isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)}


@dataclass
class Finding:
    case: Path
    engine: str
    run: str                 # the run name, e.g. reverse-float64@warp
    kind: str
    message: str

    @property
    def mode(self) -> str:
        return self.run.split("-")[0]

    @property
    def oracle(self) -> str:
        m = re.search(r"(?:: )?(zero|fd-\w+|dot|nondet|primal-\w+|rel-\w+|\w+-relation)\b", self.message)
        return "crash" if self.kind == "crash" else (m.group(1) if m else "fail")


def saved_findings(folder: Path) -> list[Finding]:
    found = []
    for case in sorted((Path(folder) / "cases").glob("fuzz-*.yaml")):
        doc = yaml.safe_load(case.read_text())
        m = _FOUND.search(doc.get("description", ""))
        parts = case.stem.split("-")
        engine, kind = (parts[2], "-".join(parts[3:])) if len(parts) > 3 else ("bundled", parts[-1])
        run = (m.group(1) + (f"@{m.group(2)}" if m.group(2) else "")) if m else "reverse"
        message = doc["description"].split("Found: ", 1)[-1]
        found.append(Finding(case, engine, run, kind, message))
    return found


def first_signature(f: Finding) -> tuple:
    src = (f.case.parent.parent / yaml.safe_load(f.case.read_text())["kernel"].split(":")[0]).read_text()
    return (f.engine, f.mode, f.oracle, tuple(constructs(src)))


def _message_head(message: str) -> str:
    return re.sub(r"[\d.e+-]{3,}", "N", message.split("\n")[0])[:90]


def reduce_finding(f: Finding, root: Path, budget: int, deadline_s: float, log=print):
    """(reduced kernel source, reduced case dict, signature) of one finding, through its engine."""
    import copy

    from harness.execution.runner import Runner
    from harness.tools.common import load_runs
    from harness.tools.reduce import ModuleContext, Reducer, one_run_case
    spec = f"{f.case}::{f.run}"
    _, runs = load_runs(spec, f.case.parent.parent, "sim")
    run = runs[0]
    module = ModuleContext(f.case.parent.parent / run.case.kernel.path, run.case.kernel.function)
    case = one_run_case(f.case, run)
    case.pop("engines", None)             # the reduction judges the engine itself, not its xfail
    # One block of exactly the launch's threads: a reduction that drops the bounds guard then stays in
    # bounds (the adapters run on the CPU without bounds checks; a rounded-up block read past the end).
    launch = case.get("launch") or {}
    if "threads" in launch:
        launch["block"] = launch["threads"]
    reducer = Reducer(root, run, Runner(root, "sim", timeout_s=60), module, copy.deepcopy(case), log=log,
                      budget=budget, deadline_s=deadline_s)
    try:
        reducer.start()
        # a target that passes, or shows only its known bug, has nothing left to shrink
        best = reducer.reduce() if reducer.target.state not in FIXED else reducer.best
    finally:
        reducer.cleanup()
    source = module.source(ast.fix_missing_locations(best.function), helpers=best.helpers)
    return source, best.case, (f.engine, f.mode, f.oracle, tuple(constructs(source))), str(reducer.target)


def reproduces(target: str) -> bool:
    """Whether a reduction's target (its first run's signature, "STATE; ...") is still a wrong
    gradient or a crash: a finding of code since changed can pass today."""
    from harness.policy import BUG_STATES
    return target.split(";")[0].strip() in BUG_STATES


def _system_banner(line: str) -> bool:
    """A line Warp or Taichi prints on its own (start-up, a missing CUDA driver), not the reproducer's."""
    return "[Taichi]" in line or line.startswith(("Warp CUDA warning", "Warp 1.", "Module ")) \
        or "Could not find or load the NVIDIA CUDA driver" in line


def run_reproducer(path: Path, timeout_s: float = 600) -> tuple[int, str]:
    """Run a reproducer as a user would: a fresh interpreter, no harness on its path."""
    import os
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-I", str(path)], capture_output=True, text=True, timeout=timeout_s,
                          env=env, cwd=path.parent)
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip() and not _system_banner(ln)]
    return done.returncode, "\n".join(lines[-4:])


def group_key(f: Finding, signature: tuple) -> tuple:
    """Step 1's group: (engine, mode, oracle, the known classes the kernel could be), or, for a kernel
    that could be none, its whole first signature."""
    from harness.fuzz.known import known_classes
    hits = known_classes(signature)
    return (f.engine, f.mode, f.oracle, ("known:",) + tuple(hits)) if hits else signature


def _kernel_size(f: Finding) -> int:
    return len((f.case.parent.parent / yaml.safe_load(f.case.read_text())["kernel"].split(":")[0]).read_text())


def triage(findings: Path, out: Path, root: Path, log_file: Path | None = None, budget: int = 40,
           deadline_s: float = 300, sample: int = 1, total_s: float | None = None, say=print) -> list[dict]:
    """Steps 1-4 of the module's doc; returns one record per distinct finding (and one per group left
    unreduced when `total_s` ran out, with `signature` None)."""
    import os
    import time
    started = time.time()
    # Each adapter run of a candidate in a child process of its own (harness/adapters/isolation.py): a
    # shrunk shape can index past an array, which Warp's and Taichi's CPU devices do not check, and a
    # heap corruption there ("corrupted size vs. prev_size") killed the whole triage.
    os.environ.setdefault("HARNESS_ISOLATE_ENGINES", "1")
    groups: dict[tuple, list[Finding]] = {}
    for f in saved_findings(findings):
        groups.setdefault(group_key(f, first_signature(f)), []).append(f)
    say(f"{sum(map(len, groups.values()))} saved findings in {len(groups)} groups")
    out = Path(out)
    (out / "kernels").mkdir(parents=True, exist_ok=True)
    (out / "cases").mkdir(parents=True, exist_ok=True)
    distinct: dict[tuple, dict] = {}
    unreduced, gone = [], []            # groups not reduced; findings that pass (or are refused) today
    # groups no known class explains first: they are where a new bug is
    order = sorted(groups.items(), key=lambda kv: ("known:" in (kv[0][3][:1]), -len(kv[1])))
    for key, members in order:
        members = sorted(members, key=_kernel_size)
        if total_s is not None and time.time() - started > total_s:
            unreduced.append({"group": key, "seeds": [m.case.stem for m in members], "signature": None})
            continue
        reduced = []
        for f in members[:sample]:
            say(f"reducing {f.case.name} {f.run} (group of {len(members)}: {key[3][:6]})")
            try:
                reduced.append((f, reduce_finding(f, root, budget, deadline_s, log=lambda s: None)))
            except Exception as exc:            # a finding the reducer cannot restate: keep it unreduced
                say(f"  not reduced: {type(exc).__name__}: {exc}")
        if not reduced:
            unreduced.append({"group": key, "seeds": [m.case.stem for m in members], "signature": None})
            continue
        for n, (f, (source, case, signature, target)) in enumerate(reduced):
            rest = [m.case.stem for m in members[len(reduced):]] if n == 0 else []
            if not reproduces(target):
                say(f"  no longer reproduces: {target}")
                gone.append({"group": key, "seeds": [f.case.stem] + rest, "signature": None, "target": target})
                continue
            if signature in distinct:
                distinct[signature]["seeds"].append(f.case.stem)
                distinct[signature]["presumed"] += rest
                continue
            distinct[signature] = _write_distinct(f, source, case, signature, target, out, say)
            distinct[signature]["presumed"] = rest
            say(f"  distinct: {signature} {distinct[signature]['known'] or 'NEW'}")
    records = list(distinct.values())
    (out / "campaign.md").write_text(campaign_page(records, log_file, unreduced, gone, by_known_class(groups)))
    return records + unreduced + gone


def _write_distinct(f: Finding, source: str, case: dict, signature: tuple, target: str, out: Path, say) -> dict:
    """Step 3 for one distinct finding: its case, kernel and (Warp, Taichi) reproducer, run."""
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    from harness.fuzz import reproducer
    from harness.fuzz.known import known_classes
    from harness.tools.reduce import case_text
    name = f"fuzz-{f.engine}-{f.mode}-{'-'.join(signature[3])[:60] or 'plain'}".replace("_", "-")
    kernel = out / "kernels" / f"{name.replace('-', '_')}.py"
    kernel.write_text(f'"""Reduced from {f.case.stem} ({f.run}) by `harness fuzz --triage`: {target}."""\n' + source)
    case["id"], case["kernel"] = name, f"kernels/{kernel.name}:kernel"
    case["title"] = f"{f.engine} {f.mode}: {f.oracle} with {', '.join(signature[3]) or 'plain arithmetic'} (fuzzing)"
    case["description"] = f"Found by `harness fuzz` ({f.case.stem}, {f.run}): {plain_text(f.message)[:300]}"
    if f.engine != "bundled":
        from harness.fuzz.differential import found_by_fuzzing
        case["engines"] = {f.engine: {"expect": found_by_fuzzing(f.engine, f.message)}}
    case_path = out / "cases" / f"{name}.yaml"
    case_path.write_text(case_text(case))
    record = {"signature": signature, "engine": f.engine, "run": f.run, "oracle": f.oracle, "case": str(case_path),
              "kernel": source, "seeds": [f.case.stem], "target": target, "reproducer": None,
              "known": known_classes(signature)}
    if f.engine != "bundled" and f.kind != "crash":
        runner = Runner(out, "sim", timeout_s=120)
        run = next(r for c in load_case_file(case_path, out) for r in expand_runs(c, "sim", (f.engine,))
                   if r.mode == "reverse") if "reverse" in case.get("modes", []) else None
        if run is None:        # a forward finding: the reproducer checks the reverse pass of its kernel
            case2 = dict(case, modes=["reverse"])
            case_path.write_text(case_text(case2))
            run = next(r for c in load_case_file(case_path, out) for r in expand_runs(c, "sim", (f.engine,)))
            case_path.write_text(case_text(case))
        outcome = runner.execute(run)
        translated = outcome.sources.get("reverse")
        if translated:
            launch = case["launch"]
            threads, block = launch["threads"], launch.get("block", launch["threads"])
            dims = [(t + b - 1) // b * b for t, b in zip(*(v if isinstance(v, list) else [v] for v in (threads, block)))]
            script = out / f"repro_{name.replace('-', '_')}.py"
            reproducer.write(script, f.engine, Path(translated), case, (case.get("dtypes") or ["float64"])[0],
                             dims[0] if len(dims) == 1 else dims, case["title"])
            code, said = run_reproducer(script)
            record.update(reproducer=str(script), reproducer_exit=code, reproducer_says=said,
                          reverse_state=outcome.state)
            say(f"  reproducer {script.name}: exit {code}: {said.splitlines()[-1] if said else ''}")
    return record


def by_known_class(groups: dict) -> list[tuple]:
    """(engine, class, findings whose kernels could be it, findings it alone explains) per known class
    of the groups' keys, most findings first: what the campaign found again, before any reduction."""
    from collections import Counter
    could, alone = Counter(), Counter()
    for key, members in groups.items():
        if key[3][:1] != ("known:",):
            continue
        for name in key[3][1:]:
            could[(key[0], name)] += len(members)
            if len(key[3]) == 2:
                alone[(key[0], name)] += len(members)
    return [(engine, name, n, alone[(engine, name)]) for (engine, name), n in could.most_common()]


def campaign_page(records: list[dict], log_file: Path | None, unreduced: list[dict] = (), gone: list[dict] = (),
                  known: list[tuple] = ()) -> str:
    """The campaign's page: distinct findings per engine and construct, refusals, throughput."""
    lines = ["# Differential fuzz campaign", ""]
    if log_file and Path(log_file).exists():
        from harness.fuzz.campaign import summarize_log
        t = summarize_log(Path(log_file))
        rate = t.kernels / t.seconds * 60 if t.seconds else 0
        lines += [f"{t.kernels} kernels, {t.runs} runs, {t.passes} pass, {sum(t.refusals.values())} refusals, "
                  f"{len(t.inconclusive)} inconclusive, {len(t.findings)} saved findings; "
                  f"throughput {rate:.1f} kernels per minute of run time ({t.seconds:.0f} s).", "",
                  "| engine | outcome | runs |", "|---|---|---|"]
        lines += [f"| {k.split(' ')[0]} | {k.split(' ', 1)[1]} | {n} |" for k, n in sorted(t.engine_runs.items())]
        lines += ["", "## Refusals by reason", "", "| runs | engine: reason |", "|---|---|"]
        lines += [f"| {n} | {r.replace('|', '/')} |" for r, n in t.refusals.most_common()]
    if known:
        lines += ["", "## Saved findings by the known class their kernels could be (harness/fuzz/known.py)", "",
                  "| engine | class | findings that could be it | findings only it explains |", "|---|---|---|---|"]
        lines += [f"| {e} | `{name}` | {n} | {alone} |" for e, name, n, alone in known]
    lines += ["", "## Distinct findings", ""]
    for r in sorted(records, key=lambda r: (r["engine"], r["signature"][3])):
        lines += [f"### {r['engine']} {r['run']}: {r['oracle']} with {', '.join(r['signature'][3]) or 'plain arithmetic'}",
                  "", f"Signature `{r['signature']}`; known classes it matches: {', '.join(r['known']) or 'none (new)'}; "
                  f"reduced from {', '.join(r['seeds'])}, and {len(r.get('presumed', []))} more of its group presumed "
                  f"alike ({', '.join(r.get('presumed', [])[:8])}{', ...' if len(r.get('presumed', [])) > 8 else ''}); "
                  f"case `{r['case']}`; the reduced run: {r['target']}.", ""]
        if r.get("reproducer"):
            lines += [f"Reproducer `{r['reproducer']}` (exit {r['reproducer_exit']}):", "", "```",
                      r["reproducer_says"], "```", ""]
        lines += ["```python", r["kernel"].strip(), "```", ""]
    if gone:
        lines += ["## Findings that no longer reproduce (the code they were found on has changed)", "",
                  "| group | findings | today |", "|---|---|---|"]
        lines += [f"| `{g['group']}` | {', '.join(g['seeds'][:4])} | {g['target']} |" for g in gone]
        lines += [""]
    if unreduced:
        lines += ["## Groups not reduced (out of time, or the reducer could not restate them)", "",
                  "| group | findings | first |", "|---|---|---|"]
        lines += [f"| `{u['group']}` | {len(u['seeds'])} | {', '.join(u['seeds'][:4])} |" for u in unreduced]
    return "\n".join(lines) + "\n"
