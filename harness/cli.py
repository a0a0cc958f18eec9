"""The `harness` console script: one argparse subcommand per job."""
from __future__ import annotations

import argparse
import sys

from harness.report.cli import add_report_parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness",
                                     description="GPU automatic-differentiation regression harness")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_report_parser(subparsers)

    # --- `harness run` goes here -------------------------------------------------------------
    # Reserved for the runner's engineer: register it like `report`, i.e. an
    # `add_run_parser(subparsers)` that calls `parser.set_defaults(func=run_run)` where
    # `run_run(args) -> int` returns the exit status. Nothing else in this file needs to change.
    # -------------------------------------------------------------------------------------------
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
