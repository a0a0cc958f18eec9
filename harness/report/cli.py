"""`harness report RESULTS... -o reports/report.html [--baseline OLD] [--bench B.json] [--categories F]`.

Exit status: 0, or 1 when a baseline is given and a run fails now that did not fail in it (so CI
can fail on regressions only), or 2 on unusable input."""
from __future__ import annotations

import argparse
import sys

from harness.report import write_report
from harness.results.record_check import printable
from harness.report.categories import CategoryConfigError
from harness.report.targets import OutputOptionError, check_report_target


def add_report_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "report", help="render results files into a static HTML report",
        description="Render one or more JSON-lines results files into a self-contained HTML page. "
                    "Several files are merged; a later record of the same run replaces an earlier one.")
    parser.add_argument("results", nargs="+", metavar="RESULTS", help="results file(s) (JSON lines)")
    parser.add_argument("-o", "--output", default="reports/report.html", help="HTML file to write "
                        "(default: %(default)s; reports/index.html is the sessions index that pytest sessions "
                        "rewrite)")
    parser.add_argument("--baseline", action="append", default=[], metavar="OLD_RESULTS",
                        help="results to compare against (repeatable; merged like RESULTS); the exit "
                             "status is 1 when a run fails now that did not fail there")
    parser.add_argument("--bench", metavar="BENCH.json", help="benchmark JSON for bar charts: "
                        "a list of {name, ratio|value, unit}")
    parser.add_argument("--categories", metavar="FILE", help="YAML failure-category rules "
                        "(default: the bundled harness/report/categories.yaml)")
    parser.add_argument("--title", default="GPU AD compatibility report")
    parser.add_argument("--embed-sources", choices=("failures", "all", "none"), default="failures",
                        help="which runs get their generated source embedded (default: %(default)s)")
    parser.set_defaults(func=run_report)
    return parser


def run_report(args: argparse.Namespace) -> int:
    try:
        check_report_target(args.output, "-o")
        result = write_report(args.results, args.output, baseline=args.baseline, bench=args.bench,
                              categories=args.categories, title=args.title,
                              embed_sources=args.embed_sources)
    except (OSError, ValueError, CategoryConfigError, OutputOptionError) as exc:
        # OSError: a missing or unreadable input, or an unwritable output; ValueError: a bad
        # bench file. Both are the user's to fix, so a one-line message rather than a traceback.
        print(printable(f"harness report: error: {exc}"), file=sys.stderr)
        return 2
    for warning in result.warnings:
        print(f"warning: {printable(warning)}", file=sys.stderr)
    if result.comparison is not None:
        print(f"baseline: {result.comparison.summary()}")
        for line in new_failure_lines(result.comparison):
            print(printable(line))
    print(printable(result.summary))
    return 1 if result.comparison is not None and result.comparison.new_failures else 0


def new_failure_lines(comparison, limit: int = 20) -> list[str]:
    """`  new failure: RUN [backend] PASS -> FAIL`, one line each (at most `limit`)."""
    lines = [f"  new failure: {c.run_id} [{c.backend}] {c.old_state or 'absent'} -> {c.new_state}"
             for c in comparison.new_failures[:limit]]
    if len(comparison.new_failures) > limit:
        lines.append(f"  ... and {len(comparison.new_failures) - limit} more")
    return lines
