"""The cross-engine compatibility table from results files, as Markdown (the data the report's
engine columns show; the HTML matrix is harness/report's).

    python -m harness.adapters.table RESULTS.jsonl [MORE.jsonl ...]
    python -m harness.adapters.table --summary RESULTS.jsonl     # for the end of a test command

Per engine: pass rate and counts (pass, fail, unsupported, xfail, skip); then one row per case and
variant with each engine's states over its runs, and the reason for each UNSUPPORTED. With
--summary the whole Markdown goes to RESULTS.compat.md and the terminal gets what fits a screen:
the refusals grouped by reason with counts, then the per-engine table, then the paths to open.

Per engine: pass rate and counts (pass, fail, unsupported, xfail, skip); then one row per case and
variant with each engine's states over its runs, and the reason for each UNSUPPORTED.
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from harness.policy import FAILING, State


def _runs(paths: list[Path]) -> list[dict]:
    out = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue                         # a torn last line
            if rec.get("type", "run") == "run" and "state" in rec:
                out.append(rec)
    return out


def engine_rates(runs: list[dict]) -> dict[str, dict]:
    """engine -> {runs, pass, fail, unsupported, xfail, skip, pass_rate (of the runs not skipped)}."""
    rates: dict[str, dict] = {}
    for r in runs:
        e = rates.setdefault(r.get("engine", "bundled"), {"version": r.get("engine_version", ""), "runs": 0,
                                                          "pass": 0, "fail": 0, "unsupported": 0, "xfail": 0,
                                                          "skip": 0})
        e["runs"] += 1
        s = r["state"]
        key = "pass" if s == State.PASS else "fail" if s in FAILING else s.lower()
        e[key if key in e else "fail"] += 1
    for e in rates.values():
        judged = e["runs"] - e["skip"]
        e["pass_rate"] = round(e["pass"] / judged, 3) if judged else None
    return rates


def _short(state: str) -> str:
    return {State.UNSUPPORTED: "UNSUP"}.get(state, state)


def markdown(runs: list[dict]) -> str:
    rates = engine_rates(runs)
    engines = sorted(rates, key=lambda e: (e != "bundled", e))
    lines = ["| engine | version | runs | pass | fail | unsupported | xfail | skip | pass rate |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in engines:
        e = rates[name]
        rate = "-" if e["pass_rate"] is None else f"{100 * e['pass_rate']:.0f}%"
        lines.append(f"| {name} | {e['version']} | {e['runs']} | {e['pass']} | {e['fail']} | {e['unsupported']} | "
                     f"{e['xfail']} | {e['skip']} | {rate} |")
    cells: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    reasons: dict[tuple, dict[str, str]] = defaultdict(dict)
    for r in runs:
        row = (r["case_id"], r.get("variant") or "")
        engine = r.get("engine", "bundled")
        label = r["mode"] + (f"-{r['dtype']}" if r.get("dtype") else "")
        cells[row][engine].append((label, r["state"]))
        if r["state"] == State.UNSUPPORTED and engine != "bundled":
            reasons[row].setdefault(engine, r.get("message", "")[:160])
    lines += ["", "| case | variant | " + " | ".join(engines) + " |", "|---|---|" + "---|" * len(engines)]
    for row in sorted(cells):
        parts = []
        for name in engines:
            got = cells[row].get(name, [])
            states = {s for _, s in got}
            if not got:
                parts.append("")
            elif len(states) == 1:
                parts.append(_short(states.pop()))
            else:
                parts.append(", ".join(f"{lab} {_short(s)}" for lab, s in got))
        lines.append(f"| {row[0]} | {row[1]} | " + " | ".join(parts) + " |")
    if reasons:
        lines += ["", "Unsupported, with the adapter's reason:", ""]
        for row in sorted(reasons):
            for name, why in sorted(reasons[row].items()):
                lines.append(f"- {row[0]}{' [' + row[1] + ']' if row[1] else ''} ({name}): {why}")
    return "\n".join(lines) + "\n"


SUMMARY_REASONS = 12      # reasons listed on the terminal; the rest are counted in one line


def refusal_reason(engine: str, message: str) -> str:
    """A refusal's reason without what differs per case (the engine prefix, the kernel's file and
    line, which argument), so that equal reasons group."""
    text = re.sub(rf"^{re.escape(engine)} cannot run this: ", "", message or "")
    text = re.sub(r"^[^\s:]+\.py:\d+: ", "", text)
    text = re.sub(r"^argument \d+ \('[^']*'\): ", "", text)
    return text.strip()[:160] or "(no reason given)"


def summary(runs: list[dict], full: Path, reports: list[str]) -> str:
    """The end of a test command: refusals by reason (counted), the engine table, where to look."""
    by_reason: Counter = Counter()
    for r in runs:
        engine = r.get("engine", "bundled")
        if r["state"] == State.UNSUPPORTED and engine != "bundled":
            by_reason[(engine, refusal_reason(engine, r.get("message", "")))] += 1
    lines = []
    if by_reason:
        lines.append(f"Refusals by reason ({sum(by_reason.values())} runs; every one, per case: {full}):")
        for (engine, why), n in by_reason.most_common(SUMMARY_REASONS):
            lines.append(f"  {n:4d}  {engine}: {why}")
        rest = by_reason.most_common()[SUMMARY_REASONS:]
        if rest:
            lines.append(f"  {sum(n for _, n in rest):4d}  in {len(rest)} other reasons (see {full})")
        lines.append("")
    lines += markdown(runs).split("\n\n")[0].splitlines()
    lines += ["", f"compatibility table, per case: {full}", *(f"report: {p}" for p in reports)]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m harness.adapters.table")
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--summary", action="store_true",
                        help="write the whole table to RESULTS.compat.md and print what fits a screen")
    parser.add_argument("--report", action="append", default=[],
                        help="a report to name at the end (with --summary; repeatable)")
    args = parser.parse_args(argv)
    runs = _runs(args.results)
    if not args.summary:
        print(markdown(runs), end="")
        return 0
    full = args.results[0].with_suffix(".compat.md")
    full.write_text(markdown(runs))
    print(summary(runs, full, [r for r in args.report if Path(r).is_file()]), end="")   # those written
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
