"""The release matrix as one HTML page: a chart of states per release, the runs whose state
changed (with their "fixed in" and "regressed in" marks) and, folded, the runs that did not.

The page uses the report's stylesheet and state colours (harness/report/templates/report.css), so a
state looks the same here as in a session's report.
"""
from __future__ import annotations

from html import escape
from pathlib import Path

from harness.policy import STATES
from harness.report.state_chart import STATE_FILL
from harness.report.svg import text_width
from harness.releases.matrix import ReleaseMatrix

_CSS = Path(__file__).resolve().parent.parent / "report" / "templates" / "report.css"


def chart(matrix: ReleaseMatrix, bar: int = 26, height: int = 160) -> str:
    """Inline SVG: one stacked bar per release, a segment per state, its count in the tooltip."""
    versions = matrix.versions
    total = max((sum(matrix.counts(v).values()) for v in versions), default=0) or 1
    # version labels are turned by 45 degrees: each reaches its length / sqrt(2) left and down
    slant = max((text_width(v) for v in versions), default=0.0) / 2 ** 0.5
    left = round(max(36.0, slant - bar / 2 + 4))
    bottom, gap = round(slant + 18), 10
    width = left + len(versions) * (bar + gap) + 10
    parts = [f'<svg class="releases-chart" role="img" width="{width}" height="{height + bottom}" '
             f'viewBox="0 0 {width} {height + bottom}" aria-label="states per release of {escape(matrix.engine)}">']
    parts.append(f'<text x="2" y="12" font-size="10">{total}</text><text x="2" y="{height}" font-size="10">0</text>')
    for k, v in enumerate(versions):
        x, y = left + k * (bar + gap), float(height)
        counts = matrix.counts(v)
        for state in STATES:
            n = counts.get(state, 0)
            if not n:
                continue
            h = height * n / total
            y -= h
            parts.append(f'<rect class="seg s-{state}" x="{x}" y="{y:.1f}" width="{bar}" height="{h:.1f}" '
                         f'fill="{STATE_FILL[state]}"><title>{escape(v)}: {n} {state}</title></rect>')
        parts.append(f'<text x="{x + bar / 2}" y="{height + 12}" font-size="10" text-anchor="end" '
                     f'transform="rotate(-45 {x + bar / 2} {height + 12})">{escape(v)}</text>')
    parts.append("</svg>")
    legend = " ".join(f'<span class="s-{s}">{s}</span>' for s in STATES
                      if any(matrix.counts(v).get(s) for v in versions))
    return "".join(parts) + f'<p class="legend">{legend}</p>'


def _row(matrix: ReleaseMatrix, row) -> str:
    cells = []
    for v in matrix.versions:
        state = row.states.get(v)
        if state is None:
            cells.append('<td class="s-other">-</td>')
            continue
        mark = " fixed" if v in row.fixed_in else " regressed" if v in row.regressed_in else ""
        cells.append(f'<td class="s-{state}{mark}" title="{escape(row.messages.get(v, ""))}">{state}'
                     + ("<br><b>fixed in</b>" if v in row.fixed_in else "")
                     + ("<br><b>regressed in</b>" if v in row.regressed_in else "") + "</td>")
    return f"<tr><th><code>{escape(row.run_id)}</code></th>{''.join(cells)}</tr>"


def render(matrix: ReleaseMatrix, command: str) -> str:
    head = "".join(f"<th>{escape(v)}</th>" for v in matrix.versions)
    changed = matrix.changed
    same = [r for r in matrix.rows if not r.changed]
    problems = "".join(f"<li>{escape(v)}: {escape(why)}</li>" for v, why in matrix.problems.items())
    table = lambda rows: (f'<table class="matrix releases"><tr><th>run</th>{head}</tr>'
                          + "".join(_row(matrix, r) for r in rows) + "</table>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(matrix.engine)} across releases</title>
<style>{_CSS.read_text(encoding="utf-8")}
td.fixed{{outline:2px solid #1a7f37}} td.regressed{{outline:2px solid #cf222e}}</style></head>
<body><h1>{escape(matrix.engine)} across {len(matrix.versions)} releases</h1>
<p>{len(matrix.rows)} runs; {len(changed)} changed state between releases. Regenerate: <code>{escape(command)}</code></p>
{f'<ul class="problems">{problems}</ul>' if problems else ''}
{chart(matrix)}
<h2>Runs whose state changed</h2>
{table(changed) if changed else '<p>None.</p>'}
<details><summary>{len(same)} runs with the same state in every release</summary>{table(same)}</details>
</body></html>
"""
