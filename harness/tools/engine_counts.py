"""The corpus's counts per engine in docs/engines.md, from results files, so that the doc's numbers
are never typed by hand: `python -m harness.tools.engine_counts RESULTS... --doc docs/engines.md`
rewrites the block between `<!-- engine-counts -->` and `<!-- /engine-counts -->`; without --doc
it prints the block.

The results come from `pytest cases --backend sim --engine warp,taichi --results RESULTS` (or a
release run's file, reports/releases/ENGINE/VERSION.jsonl); the block names the git revision they
were measured at. tests/unit/test_docs.py checks the block's form and the command on a small input.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.adapters.table import engine_rates

MARKERS = ("<!-- engine-counts -->", "<!-- /engine-counts -->")
COMMAND = "python -m harness.tools.engine_counts"
COLUMNS = ("runs", "pass", "fail", "unsupported", "xfail", "skip")


def read_runs(paths: list[Path]) -> tuple[list[dict], list[str]]:
    """The run records of the adapters' engines (the bundled engine has its own tables), and the
    git revisions the files' sessions were run at."""
    runs, revisions = [], []
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue                                   # a torn last line
            if record.get("type") == "meta":
                revision = str(record.get("git_revision") or "")[:7]
                if revision and revision not in revisions:
                    revisions.append(revision)
            elif record.get("type", "run") == "run" and "state" in record \
                    and record.get("engine", "bundled") != "bundled":
                runs.append(record)
    return runs, revisions


def table(runs: list[dict]) -> str:
    rates = engine_rates(runs)
    lines = ["| engine | " + " | ".join(COLUMNS) + " |", "|---|" + "---|" * len(COLUMNS)]
    for name in sorted(rates):
        counts = rates[name]
        label = f"{name.capitalize()} {counts['version']}".strip()
        lines.append(f"| {label} | " + " | ".join(str(counts[c]) for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def block(runs: list[dict], revisions: list[str], sources: list[str]) -> str:
    """The doc's block: where the numbers come from, the command that rewrites it, the table."""
    at = f" at git {', '.join(revisions)}" if revisions else ""
    return (f"Counted from {', '.join(f'`{s}`' for s in sources)}{at} (`fail` counts every failing state: "
            f"FAIL, ZERO, NONDET, ERROR, XPASS). Regenerate with "
            f"`{COMMAND} {' '.join(sources)} --doc docs/engines.md`.\n\n" + table(runs))


def replace_block(text: str, body: str) -> str:
    start, end = MARKERS
    if start not in text or end not in text:
        raise ValueError(f"no {start} ... {end} block to replace")
    before, rest = text.split(start, 1)
    return f"{before}{start}\n{body}{end}{rest.split(end, 1)[1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results files (JSONL)")
    parser.add_argument("--doc", type=Path, help="rewrite the engine-counts block of this file")
    args = parser.parse_args(argv)
    runs, revisions = read_runs(args.results)
    if not runs:
        print(f"{COMMAND}: no Warp or Taichi runs in {', '.join(map(str, args.results))}", file=sys.stderr)
        return 1
    body = block(runs, revisions, [str(p) for p in args.results])
    if args.doc is None:
        print(body, end="")
        return 0
    args.doc.write_text(replace_block(args.doc.read_text(encoding="utf-8"), body), encoding="utf-8")
    print(f"{COMMAND}: the counts in {args.doc} are updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
