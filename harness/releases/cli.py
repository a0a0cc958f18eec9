"""`harness releases` and `harness bisect`: the corpus across an engine's releases."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from harness.results.store import atomic_write_text, read_results
from harness.releases.bisect import bisect_run
from harness.releases.envs import DISTRIBUTIONS, ReleaseEnvError, available, ensure, last_of_each_minor, version_key
from harness.releases.matrix import build_matrix, markdown, replace_section
from harness.releases.page import render
from harness.releases.run import run_release


def _versions(engine: str, versions: list, minors: str | None) -> list:
    chosen = list(versions)
    if minors:
        first, _, last = minors.partition(":")
        chosen += last_of_each_minor(available(engine), first or None, last or None)
    if not chosen:
        raise SystemExit("harness releases: name the releases (e.g. 1.10.0 1.19.0) or a range of minor "
                         "releases (--minors 1.0:1.19)")
    return sorted(dict.fromkeys(chosen), key=version_key)


def releases_main(args) -> int:
    project = Path.cwd()
    versions = _versions(args.engine, args.versions, args.minors)
    selection = list(args.cases) + (["-k", args.k] if args.k else [])
    outcomes, problems = {}, {}
    for v in versions:
        print(f"harness releases: {args.engine} {v} ...", flush=True)
        try:
            env = ensure(args.engine, v, project)
        except ReleaseEnvError as e:
            problems[v] = str(e)
            print(f"  {e}")
            continue
        result = run_release(env, project, selection, jobs=args.jobs, reuse=args.reuse)
        if result.problem:
            problems[v] = result.problem
            print(f"  {result.problem}")
        if result.results.is_file():
            outcomes[v] = read_results(result.results)[1]
    matrix = build_matrix(args.engine, outcomes, problems)
    command = "harness releases " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if args.command_line is None \
        else args.command_line
    out = Path(args.output or f"reports/releases-{args.engine}.html")
    atomic_write_text(out, render(matrix, command))
    if args.doc:
        doc = Path(args.doc)
        atomic_write_text(doc, replace_section(doc.read_text(encoding="utf-8"), args.section or args.engine,
                                               markdown(matrix, command)))
        print(f"harness releases: the table in {doc} is updated")
    for v in matrix.versions:
        counts = matrix.counts(v)
        print(f"  {v:>8}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for row in matrix.changed:
        marks = "; ".join([f"fixed in {', '.join(row.fixed_in)}"] * bool(row.fixed_in)
                          + [f"regressed in {', '.join(row.regressed_in)}"] * bool(row.regressed_in))
        print(f"  changed: {row.run_id}: " + ", ".join(f"{v} {s}" for v, s in row.states.items())
              + (f" ({marks})" if marks else ""))
    print(f"harness releases: {out}: {len(matrix.rows)} runs across {len(matrix.versions)} releases of "
          f"{args.engine}, {len(matrix.changed)} changed")
    return 1 if len(problems) == len(versions) else 0


def bisect_main(args) -> int:
    project = Path.cwd()
    run_id = args.run if "@" in args.run.rpartition("::")[2] else f"{args.run}@{args.engine}"
    versions = _versions(args.engine, args.releases or [], args.minors or (None if args.releases else "1.0:"))
    result = bisect_run(run_id, args.engine, versions, project)
    print(result.summary())
    return 0


def add_releases_parser(subparsers) -> None:
    engines = ", ".join(DISTRIBUTIONS)
    p = subparsers.add_parser("releases", help="run the corpus through several releases of an engine",
                              description="Run the corpus (or a selection) through each release of an engine, "
                                          "each installed on demand into its own cached folder, and write the "
                                          "release matrix (docs/engines.md, 'Across releases').")
    p.add_argument("engine", choices=sorted(DISTRIBUTIONS), help=f"the engine ({engines})")
    p.add_argument("versions", nargs="*", help="releases, e.g. 1.10.0 1.19.0")
    p.add_argument("--minors", metavar="FIRST:LAST", help="also the newest patch of every minor release in "
                                                        "the range, e.g. 1.0:1.19 (asks the package index)")
    p.add_argument("--cases", nargs="+", default=["cases"], help="case files or run ids (default: cases)")
    p.add_argument("-k", help="pytest -k expression selecting runs")
    p.add_argument("-j", "--jobs", type=int, default=1, help="pytest-xdist workers per release")
    p.add_argument("--reuse", action="store_true", help="reuse a release's results from an earlier run")
    p.add_argument("-o", "--output", help="the page (default: reports/releases-ENGINE.html)")
    p.add_argument("--doc", help="also replace the table between <!-- releases:ENGINE --> markers in this file")
    p.add_argument("--section", help="with --doc: the table between <!-- releases:SECTION --> markers instead "
                                     "(several tables of one engine, e.g. runs of different corpora)")
    p.add_argument("--command-line", help=argparse.SUPPRESS)
    p.set_defaults(func=releases_main)
    b = subparsers.add_parser("bisect", help="find the first release where a run's state changed",
                              description="Binary search over an engine's releases for the first one where "
                                          "RUN's state differs from the oldest release's.")
    b.add_argument("run", help="a run id, e.g. cases/warp-947-write-after-read.yaml::reverse-float32")
    b.add_argument("--engine", required=True, choices=sorted(DISTRIBUTIONS))
    b.add_argument("--releases", nargs="+", help="the releases to search (default: every minor release)")
    b.add_argument("--minors", metavar="FIRST:LAST", help="the newest patch of every minor release in the range")
    b.set_defaults(func=bisect_main)
