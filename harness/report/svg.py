"""Small inline SVG plots, drawn as text so the report needs no plotting library and no network.

Every piece of text that reaches the SVG (entry indices, benchmark names) goes through
markupsafe.escape; the returned Markup is therefore safe to embed as is.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable

from markupsafe import Markup, escape

from harness.model import WorstEntry


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _span(values: list[float]) -> tuple[float, float]:
    """A padded [lo, hi] containing values, never of zero width."""
    lo, hi = min(values), max(values)
    if hi == lo:
        pad = abs(lo) * 0.1 or 1.0
    else:
        pad = (hi - lo) * 0.06
    return lo - pad, hi + pad


_CHAR_W = 6.2        # px per character of the 10 px tick font, rounded up: a margin made from it holds the label


def text_width(text: str) -> float:
    """An upper estimate of a tick label's width, for margins that never clip it."""
    return len(text) * _CHAR_W


def coincident(points: Iterable[tuple[float, float]], resolution: float = 1.0) -> list[tuple[float, float, int]]:
    """Points that would be drawn on the same pixel, merged: (x, y, how many), in first-seen order.
    Equal values would otherwise hide one another and eight agreeing entries look like one."""
    merged: dict[tuple[int, int], list] = {}
    for x, y in points:
        key = (round(x / resolution), round(y / resolution))
        if key in merged:
            merged[key][2] += 1
        else:
            merged[key] = [x, y, 1]
    return [tuple(v) for v in merged.values()]


def scatter_ad_fd(worst: Iterable[WorstEntry], size: int = 240,
                  labels: tuple[str, str] = ("AD", "FD")) -> Markup:
    """AD (y) against FD (x) per worst entry, with the y = x line where agreeing points lie.
    `labels` names the two values (y, x) for oracles that compare something else (render.pair_labels).

    Tick labels are whole numbers as written (the left margin is as wide as the longest); points on
    the same pixel are drawn once with their count beside them. Non-finite AD or FD values cannot be
    placed; they are counted in the caption instead.
    """
    entries = list(worst)
    points = [e for e in entries if _finite(e.ad) and _finite(e.fd)]
    dropped = len(entries) - len(points)
    if not points:
        return Markup(f'<svg class="plot" width="{size}" height="40" role="img">'
                      f'<text x="4" y="24">no finite pairs ({dropped} non-finite)</text></svg>')
    lo, hi = _span([v for e in points for v in (e.ad, e.fd)])
    lo_text, hi_text = _fmt(lo), _fmt(hi)
    margin = round(18 + max(text_width(lo_text), text_width(hi_text)))   # axis title + tick label
    inner = size - 42
    width = margin + inner + 8

    def px(value: float) -> float:
        return margin + (value - lo) / (hi - lo) * inner

    def py(value: float) -> float:
        return 8 + inner - (value - lo) / (hi - lo) * inner

    height = size + 14
    parts = [f'<svg class="plot" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'role="img" aria-label="{escape(labels[0])} against {escape(labels[1])}">',
             f'<rect x="{margin}" y="8" width="{inner}" height="{inner}" class="frame"/>',
             f'<line x1="{px(lo):.1f}" y1="{py(lo):.1f}" x2="{px(hi):.1f}" y2="{py(hi):.1f}" class="diag"/>']
    # No per-point <title>: the worst-entries table beside the plot carries the numbers, and
    # thousands of extra nodes would slow down large reports.
    for x, y, count in coincident((px(e.fd), py(e.ad)) for e in points):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{3.5 if count == 1 else 5}" class="pt"/>')
        if count > 1:                      # to the left of points near the right edge
            label = f"\u00d7{count}"
            anchor, dx = ("end", -7) if x + 7 + text_width(label) > width else ("start", 7)
            parts.append(f'<text x="{x + dx:.1f}" y="{y - 4:.1f}" class="count" text-anchor="{anchor}">'
                         f'{label}</text>')
    bottom = 8 + inner
    parts += [f'<text x="{margin}" y="{bottom + 12}" class="tick">{lo_text}</text>',
              f'<text x="{margin + inner}" y="{bottom + 12}" class="tick" text-anchor="end">{hi_text}</text>',
              f'<text x="{margin - 3}" y="{bottom}" class="tick" text-anchor="end">{lo_text}</text>',
              f'<text x="{margin - 3}" y="16" class="tick" text-anchor="end">{hi_text}</text>',
              f'<text x="{margin + inner / 2:.0f}" y="{size + 10}" class="axis" text-anchor="middle">'
              f'{escape(labels[1])}{f" ({dropped} non-finite not shown)" if dropped else ""}</text>',
              f'<text x="10" y="{8 + inner / 2:.0f}" class="axis" text-anchor="middle" '
              f'transform="rotate(-90 10 {8 + inner / 2:.0f})">{escape(labels[0])}</text>',
              '</svg>']
    return Markup("".join(parts))


def bench_value(entry: dict) -> tuple[float, str] | None:
    """(value, unit) of one bench entry: `ratio` (unit 'x' unless given) or `value`."""
    if _finite(entry.get("ratio")):
        return float(entry["ratio"]), str(entry.get("unit") or "x")
    if _finite(entry.get("value")):
        return float(entry["value"]), str(entry.get("unit") or "")
    return None


def bar_charts(entries: Iterable[dict], width: int = 640) -> list[tuple[str, Markup]]:
    """One horizontal bar chart per unit (bars of different units on one axis would mislead).

    Ratio charts get a reference line at 1.0, the parity the performance targets are stated in.
    """
    by_unit: dict[str, list[tuple[str, float, bool]]] = defaultdict(list)
    for entry in entries:
        measured = bench_value(entry)
        if measured is not None:
            value, unit = measured
            by_unit[unit].append((str(entry.get("name", "?")), value, "ratio" in entry))
    return [(unit, _bar_chart(rows, width)) for unit, rows in by_unit.items()]


def _bar_chart(rows: list[tuple[str, float, bool]], width: int) -> Markup:
    label_w, value_w, bar_h, gap = 230, 70, 16, 6
    plot_w = width - label_w - value_w
    values = [value for _, value, _ in rows]
    has_ratio = any(is_ratio for *_, is_ratio in rows)
    lo = min(0.0, *values)
    hi = max(0.0, *values, 1.0 if has_ratio else 0.0) or 1.0

    def x(value: float) -> float:
        return label_w + (value - lo) / (hi - lo) * plot_w

    height = len(rows) * (bar_h + gap) + gap
    parts = [f'<svg class="bars" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    for row, (name, value, _) in enumerate(rows):
        top = gap + row * (bar_h + gap)
        left, right = sorted((x(0.0), x(value)))
        label = escape(name if len(name) <= 34 else name[:33] + "\u2026")
        parts.append(f'<text x="{label_w - 6}" y="{top + 12}" text-anchor="end" class="lbl">'
                     f'{label}<title>{escape(name)}</title></text>'
                     f'<rect x="{left:.1f}" y="{top}" width="{max(right - left, 1):.1f}" height="{bar_h}" class="bar"/>'
                     f'<text x="{width - value_w + 4}" y="{top + 12}" class="val">{_fmt(value)}</text>')
    if has_ratio and lo <= 1.0 <= hi:
        parts.append(f'<line x1="{x(1.0):.1f}" y1="0" x2="{x(1.0):.1f}" y2="{height}" class="ref"/>')
    parts.append("</svg>")
    return Markup("".join(parts))
