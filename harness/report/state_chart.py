"""States per engine, backend and mode as inline SVG: one stacked bar per column of the matrix, drawn at
the top of the report so that where the failures are is seen before anything is read."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from markupsafe import Markup, escape

from harness.policy import STATES, State
from harness.report.svg import text_width

# The report's state colours (report.css, .s-STATE), as fills: a state looks the same everywhere.
STATE_FILL = {State.PASS: "#2da44e", State.FAIL: "#cf222e", State.ZERO: "#fb8f44", State.NONDET: "#8250df",
              State.ERROR: "#82071e", State.XFAIL: "#d4a72c", State.XPASS: "#218bff", State.UNSUPPORTED: "#afb8c1",
              State.SKIP: "#eaeef2"}


def text_colour(fill: str) -> str:
    """Dark numbers on light fills, white on dark ones (relative luminance of an #rrggbb fill)."""
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return "#1f2328" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "#fff"


def state_bars(rows: Iterable[tuple[str, Counter]], width: int = 720) -> Markup:
    """One horizontal bar per (label, state counts), segments in STATES order, each as long as its
    share of the row's runs; a segment's count is written in it where it fits and is always in its
    tooltip. Rows are drawn to the same total width: the chart compares shares, the counts say sizes."""
    rows = [(label, counts) for label, counts in rows if sum(counts.values())]
    if not rows:
        return Markup("")
    label_w = round(8 + max(text_width(label) for label, _ in rows) * 11 / 10)   # 11 px font
    total_w = round(8 + max(text_width(str(sum(c.values()))) for _, c in rows) * 11 / 10)
    plot_w = max(width - label_w - total_w, 120)
    bar_h, gap = 16, 5
    height = len(rows) * (bar_h + gap) + gap
    width = label_w + plot_w + total_w
    parts = [f'<svg class="states" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="states per engine, backend and mode">']
    for i, (label, counts) in enumerate(rows):
        top, total = gap + i * (bar_h + gap), sum(counts.values())
        parts.append(f'<text x="{label_w - 6}" y="{top + 12}" text-anchor="end" class="lbl">{escape(label)}</text>')
        x = float(label_w)
        for state in [*STATES, *sorted(set(counts) - set(STATES))]:
            n = counts.get(state, 0)
            if not n:
                continue
            w = plot_w * n / total
            parts.append(f'<rect x="{x:.1f}" y="{top}" width="{w:.1f}" height="{bar_h}" '
                         f'fill="{STATE_FILL.get(state, "#dddddd")}" data-state="{escape(state)}">'
                         f'<title>{escape(label)}: {n} {escape(state)}</title></rect>')
            if text_width(str(n)) + 4 <= w:
                parts.append(f'<text x="{x + w / 2:.1f}" y="{top + 12}" text-anchor="middle" class="n" '
                             f'fill="{text_colour(STATE_FILL.get(state, "#dddddd"))}">{n}</text>')
            x += w
        parts.append(f'<text x="{label_w + plot_w + 4}" y="{top + 12}" class="lbl">{total}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
