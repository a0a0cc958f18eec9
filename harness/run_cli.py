"""`harness run`: the main job. Runs the case suite under pytest on the chosen backend, writes
reports/results.jsonl and reports/index.html, and ends with the report's path and a summary."""
from __future__ import annotations

import os
from pathlib import Path


def add_run_parser(subparsers) -> None:
    p = subparsers.add_parser("run", help="run the case suite and write the HTML report",
                              description="Run every YAML case (or the given paths) and write the report.")
    p.add_argument("paths", nargs="*", default=["cases"], help="case files or folders (default: cases)")
    p.add_argument("--backend", default="auto", choices=("auto", "sim", "ptx", "cuda"),
                   help="auto: cuda when a GPU and cupy are present, else the simulator (default)")
    p.add_argument("-n", "--workers", default="auto",
                   help="pytest-xdist workers ('auto': one per core, at most 4; '0': no workers)")
    p.add_argument("-o", "--output", default="reports/index.html", help="HTML report path")
    p.add_argument("--results", default="reports/results.jsonl", help="JSON-lines results path")
    p.add_argument("-k", dest="keyword", default=None, help="only runs whose id matches (pytest -k)")
    p.set_defaults(func=run_run)


def _workers(value: str) -> int:
    if value == "auto":
        return max(1, min(4, os.cpu_count() or 1))
    return int(value)


def run_run(args) -> int:
    import pytest
    argv = list(args.paths) + ["--backend", args.backend, "--results", args.results, "--html", args.output,
                               "-q", "-p", "no:cacheprovider", "--rootdir", str(Path.cwd())]
    workers = _workers(args.workers)
    if workers > 1:
        argv += ["-n", str(workers)]
    if args.keyword:
        argv += ["-k", args.keyword]
    status = pytest.main(argv)
    html = Path(args.output)
    if html.exists():
        print(f"report: {html.resolve()}")
    return int(status)
