"""`harness show CASE`: what a case expands to, before or without reading the report.

For every run: its id, mode, dtype and backend, the arguments as resolved for that run (kind,
shape, dtype, init, activity) and the generated kernel files. The generated kernels exist only
once a run has built them, so each run is executed once (its state is printed too); `--static`
skips that and prints only what the case file says.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.tools.common import ToolError, load_runs, project_relative, start_backend


def add_show_parser(subparsers) -> None:
    p = subparsers.add_parser("show", help="print a case's runs, resolved arguments and generated kernels",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case", metavar="CASE", help="case file or case id, optionally ::RUN for one run")
    p.add_argument("--backend", default="auto", choices=("auto", "sim", "ptx", "cuda"),
                   help="backend the runs are expanded for (default: %(default)s)")
    p.add_argument("--static", action="store_true",
                   help="do not run anything: no generated kernel paths (default: run each run once)")
    p.set_defaults(func=run_show)


def describe_arg(spec) -> str:
    """`array float32[200] init normal` / `scalar float32 = 2.5`, as the run will build it."""
    if spec.kind == "array" and spec.array is not None:
        shape = "x".join(map(str, spec.array.shape))
        text = f"array {spec.array.dtype}[{shape}] init {spec.array.init}"
        if spec.array.layout:
            text += f" layout {spec.array.layout}"
        if spec.alias:
            text += f" (the buffer of {spec.alias})"
        return text
    if spec.kind == "scalar":
        return f"scalar {spec.dtype} = {spec.value}"
    return f"{spec.kind} {spec.value}"


def describe_launch(launch) -> str:
    if launch.style != "kernel":
        return f"{launch.style}" + (f", block {list(launch.block)}" if launch.block else "")
    if launch.threads:
        return f"threads {list(launch.threads)}, block {list(launch.block) if launch.block else 128}"
    return f"grid {list(launch.grid)}, block {list(launch.block)}"


def show_lines(path: Path, runs, root: Path, outcomes: dict | None = None) -> list[str]:
    from harness.cases.expand import apply_dtype
    first = runs[0].case
    lines = [f"{project_relative(path, root)}: {first.id}" + (f": {first.title}" if first.title else ""),
             f"  kernel: {first.kernel or 'none (native kernels only)'}"]
    lines += [f"  {engine} kernel: {ref} (native)" for engine, ref in first.native.items()]
    lines += [f"  tags: {', '.join(first.tags) or '-'}",
             f"  {len(runs)} run{'s' if len(runs) != 1 else ''}:"]
    for run in runs:
        case = run.case
        lines.append(f"  {run.run_id}")
        lines.append(f"    mode {run.mode}, dtype {run.dtype or 'as declared'}, backend {run.backend}"
                     + (f", variant {case.variant}" if case.variant else "") + f", expect {case.expect.kind}"
                     + (f" {case.expect.error_type}" if case.expect.error_type else ""))
        lines.append(f"    launch: {describe_launch(case.launch)}")
        specs = apply_dtype(case, run.dtype)
        width = max((len(s.name) for s in specs), default=0)
        for spec in specs:
            lines.append(f"    {spec.name:<{width}}  {spec.activity:<18} {describe_arg(spec)}")
        outcome = (outcomes or {}).get(run.run_id)
        if outcome is not None:
            for mode, source in outcome.sources.items():
                lines.append(f"    generated kernel ({mode}): {project_relative(Path(source), root)}")
            if not outcome.sources:
                why = f"raised {outcome.error.type} first" if outcome.error else "none generated"
                lines.append(f"    generated kernel: none ({why})")
            lines.append(f"    state: {outcome.state}: {outcome.message[:200]}")
    return lines


def run_show(args) -> int:
    root = Path.cwd()
    from harness.backends import resolve
    backend = resolve(args.backend)
    try:
        path, runs = load_runs(args.case, root, backend)
    except ToolError as exc:
        print(f"harness show: error: {exc}")
        return 2
    outcomes = None
    if not args.static:
        start_backend(backend)
        from harness.execution.runner import Runner
        runner = Runner(root, backend)
        outcomes = {run.run_id: runner.execute(run) for run in runs}
    print("\n".join(show_lines(path, runs, root, outcomes)))
    return 0
