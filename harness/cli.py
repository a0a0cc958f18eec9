"""The `harness` console script: one argparse subcommand per job."""
from __future__ import annotations

import argparse
import sys

from harness.bench.cli import add_bench_parser
from harness.fuzz.cli import add_fuzz_parser
from harness.selftest.campaign import add_mutate_parser
from harness.releases.cli import add_releases_parser
from harness.report.cli import add_report_parser
from harness.session.cli import add_run_parser
from harness.tools.new import add_new_parser
from harness.tools.reduce import add_reduce_parser
from harness.tools.show import add_show_parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness",
                                     description="GPU automatic-differentiation regression harness")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_report_parser(subparsers)
    add_mutate_parser(subparsers)

    add_run_parser(subparsers)
    add_bench_parser(subparsers)
    add_show_parser(subparsers)
    add_new_parser(subparsers)
    add_reduce_parser(subparsers)
    add_fuzz_parser(subparsers)
    add_releases_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
