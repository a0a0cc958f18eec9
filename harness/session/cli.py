"""`harness run`: the main job. Runs the case suite under pytest on the chosen backend, writes the
session's results and report (a new folder under reports/sessions/, listed in reports/index.html;
see harness/session/folders.py) and ends with the report's path and a summary."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _workers_arg(value: str) -> str:
    if value == "auto" or (value.isdigit() and int(value) >= 0):
        return value
    raise argparse.ArgumentTypeError(f"expected 'auto' or a whole number >= 0, got {value!r}")


def add_run_parser(subparsers) -> None:
    p = subparsers.add_parser("run", help="run the case suite and write the HTML report",
                              description="Run every YAML case (or the given paths) and write the report.")
    p.add_argument("paths", nargs="*", default=None, help="case files or folders (default: the project's cases/)")
    p.add_argument("--engine", default="bundled",
                   help="AD engines, comma-separated: bundled, warp, taichi (the adapters need "
                        "pip install .[engines]; default: %(default)s)")
    p.add_argument("--backend", default="auto", choices=("auto", "sim", "ptx", "cuda"),
                   help="auto: cuda when a GPU and cupy are present, else the simulator (default: %(default)s)")
    p.add_argument("-n", "--workers", default="auto", type=_workers_arg,
                   help="pytest-xdist workers ('auto': one per core, at most 4; '0': no workers; "
                        "default: %(default)s)")
    p.add_argument("-o", "--output", default=None,
                   help="HTML report path (default: index.html in the session's folder, reports/sessions/<id>/)")
    p.add_argument("--results", default=None,
                   help="JSON-lines results file, appended to (default: results.jsonl in the session's folder)")
    p.add_argument("-k", dest="keyword", default=None, help="only runs whose id matches (pytest -k; default: all)")
    p.add_argument("-t", "--tag", dest="tags", action="append", default=[], metavar="TAG",
                   help="only cases with this tag (repeatable: any of them; default: all)")
    p.add_argument("--baseline", action="append", default=[], metavar="OLD_RESULTS",
                   help="results of an earlier session: exit 1 only on runs that fail now and did not fail there "
                        "(default: none; exit 1 on any failure)")
    p.set_defaults(func=run_session)


def tag_expression(tags: list[str]) -> str:
    """A pytest -m expression for any of these case tags (the plugin marks a run with each tag,
    '-' written as '_')."""
    return " or ".join(tag.replace("-", "_") for tag in tags)


def _workers(value: str) -> int:
    if value == "auto":
        return max(1, min(4, os.cpu_count() or 1))
    return int(value)


def project_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds cases/ and the conftest.py registering the
    harness plugin."""
    for folder in (start, *start.parents):
        if (folder / "cases").is_dir() and (folder / "conftest.py").is_file():
            return folder
    return None


class _ReportPath:
    """A pytest plugin object that keeps the session's report path for the last line."""
    path = None

    def pytest_unconfigure(self, config):
        from harness.session.plugin import output_of
        output = output_of(config)
        self.path = output.report_path if output is not None else None


def run_session(args) -> int:
    import pytest
    cwd = Path.cwd()
    root = project_root(cwd)
    if root is None:
        print(f"harness run: {cwd} is not inside a harness project (no folder with cases/ and conftest.py "
              "at or above it); cd into the project", file=sys.stderr)
        return 2
    paths = [str((cwd / p).resolve()) for p in args.paths] if args.paths else [str(root / "cases")]
    from harness.adapters import parse_engines
    try:
        parse_engines(args.engine)
    except ValueError as exc:
        print(f"harness run: --engine: {exc}", file=sys.stderr)
        return 2
    # hypothesis's pytest plugin imports hypothesis for its end-of-session summary; no case uses it
    argv = paths + ["--backend", args.backend, "--engine", args.engine, "-q", "-p", "no:cacheprovider",
                    "-p", "no:hypothesispytest", "--rootdir", str(root)]
    if args.results is not None:
        argv += ["--results", str((cwd / args.results).resolve()) if args.results else ""]
    if args.output is not None:
        argv += ["--html", str((cwd / args.output).resolve()) if args.output else ""]
    workers = _workers(args.workers)
    if workers > 1:
        argv += ["-n", str(workers)]
    if args.keyword:
        argv += ["-k", args.keyword]
    if args.tags:
        argv += ["-m", tag_expression(args.tags)]
    for baseline in args.baseline:
        argv += ["--baseline", str((cwd / baseline).resolve())]
    keeper = _ReportPath()
    os.chdir(root)
    try:
        status = pytest.main(argv, plugins=[keeper])
    finally:
        os.chdir(cwd)
    if keeper.path is not None:
        print(f"report: {Path(keeper.path).resolve()}")
    return int(status)
