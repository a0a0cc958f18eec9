"""The static HTML compatibility report built from results files (docs/report.md).

`write_report` reads results (and optionally a baseline, a bench file and a categories file),
renders, writes atomically and returns a `ReportResult`; `build_report` does the same and returns
just the one-line summary, which is what the pytest plugin prints at the end of a session.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from harness.model import STATES, Outcome
from harness.report.categories import load_rules
from harness.report.compare import ResultsDiff, latest_by_key
from harness.report.render import build_view, render_view
from harness.results.store import atomic_write_text, read_results

__all__ = ["ReportResult", "build_report", "load_bench", "read_many", "summary_line", "write_report"]


@dataclass
class ReportResult:
    path: Path
    total_runs: int
    state_counts: dict[str, int]
    comparison: ResultsDiff | None
    warnings: list[str]
    size_bytes: int
    backends: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        return summary_line(self.path, self.state_counts, self.backends)


def summary_line(path, state_counts: dict[str, int], backends=()) -> str:
    """`reports/index.html: 42 runs on sim: 38 PASS, 2 XFAIL, 1 FAIL, 1 ERROR` (most frequent first)."""
    total = sum(state_counts.values())
    where = f" on {', '.join(backends)}" if backends else ""
    order = {state: i for i, state in enumerate(STATES)}
    parts = [f"{n} {s}" for s, n in sorted(state_counts.items(),
                                          key=lambda item: (-item[1], order.get(item[0], 99), item[0])) if n]
    return f"{path}: {total} run{'' if total == 1 else 's'}{where}" + (": " + ", ".join(parts) if parts else "")


def read_many(paths: Iterable[str | Path], session: str | None = None
              ) -> tuple[list[tuple[str, dict]], list[Outcome], list[str]]:
    """Merge results files in order: (per-file meta, all outcomes, warnings).

    A later record with the same (run id, backend) replaces an earlier one, also across files.
    With `session`, only that session's records count (see harness/session/folders.py).
    """
    metas, outcomes, warnings = [], [], []
    for path in paths:
        meta, runs = read_results(path, session=session)
        warnings.extend(meta.pop("warnings", []))
        metas.append((str(path), meta))
        outcomes.extend(runs)
    return metas, outcomes, warnings


def load_bench(path: str | Path) -> list[dict]:
    """Bench entries: a JSON list of {name, ratio | value, unit}, or {"results": [...]}."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = data.get("results", data.get("benchmarks"))
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise ValueError(f"{path}: expected a list of {{name, ratio|value, unit}} objects")
    return data


def build_report(results: Iterable[str | Path], output: str | Path = "reports/index.html",
                 **options) -> str:
    """Write the report; return `PATH: N runs: ...` (options as for write_report)."""
    return write_report(results, output, **options).summary


def write_report(results: Iterable[str | Path], output: str | Path = "reports/index.html", *,
                 baseline: Iterable[str | Path] = (), bench: str | Path | None = None,
                 categories: str | Path | None = None, title: str = "GPU AD compatibility report",
                 embed_sources: str = "failures", source_roots: Iterable[Path] = (),
                 session: str | None = None) -> ReportResult:
    results = [Path(p) for p in results]
    metas, outcomes, warnings = read_many(results, session=session)
    # Generated sources are read from a project's .cache/harness/generated only: the working
    # directory's, then that of a project holding each results file (reports/results.jsonl or
    # reports/sessions/ID/results.jsonl -> a few folders up).
    source_roots = list(source_roots) or [Path.cwd(), *(d for p in results for d in p.resolve().parents[:4])]
    baseline = list(baseline)
    baseline_outcomes = None
    if baseline:
        _, baseline_outcomes, baseline_warnings = read_many(baseline)
        warnings.extend(baseline_warnings)
    view = build_view(outcomes, metas=metas, baseline=baseline_outcomes,
                      bench=load_bench(bench) if bench else None, rules=load_rules(categories),
                      title=title, embed_sources=embed_sources, source_roots=source_roots,
                      warnings=warnings)
    html = render_view(view)
    atomic_write_text(output, html)
    latest = latest_by_key(outcomes).values()
    counts = Counter(o.state for o in latest)
    backends = tuple(sorted({o.backend for o in latest}))
    return ReportResult(path=Path(output), total_runs=view.total_runs, state_counts=dict(counts),
                        comparison=view.comparison, warnings=warnings,
                        size_bytes=len(html.encode("utf-8")), backends=backends)
