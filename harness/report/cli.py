"""`harness report RESULTS... -o reports/report.html [--baseline OLD] [--bench B.json] [--categories F]`."""
from __future__ import annotations

import argparse
import sys

from harness.report import write_report
from harness.record_check import printable
from harness.report.categories import CategoryConfigError
from harness.session_output import OutputOptionError, check_report_target


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
                        help="results to compare against (repeatable; merged like RESULTS)")
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
    print(printable(result.summary))
    return 0
