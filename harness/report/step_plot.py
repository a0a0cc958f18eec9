"""The finite-difference oracle's refinement stages as a small log-log plot of error against step.

Before the fd oracle declares a mismatch it refines its reference: central differences at step h,
Richardson extrapolation from h and h/2, then Richardson at a larger step (h_large and h_large/2).
Each stage's worst mismatch, in tolerances, is drawn against the finest step it evaluated, with the
tolerance (1) as a line: a stage under the line passed. Errors falling with the step say truncation
error; errors that stay put whatever the step say the derivative is wrong.
"""
from __future__ import annotations

import math

from markupsafe import Markup, escape

from harness.report.svg import text_width

# The finest step of each stage, as a fraction of the step it is recorded with (metrics h, h_large).
_STAGE_STEP = {"central": ("h", 1.0), "richardson": ("h", 0.5), "large-step": ("h_large", 0.5)}


def _largest(value) -> float | None:
    values = value if isinstance(value, list) else [value]
    finite = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
              and math.isfinite(v) and v > 0]
    return max(finite) if finite else None


def stage_points(metrics: dict) -> list[tuple[str, float, float]]:
    """(stage, step, error in tolerances) for each recorded stage whose step and error can be drawn on
    log axes (positive, finite)."""
    stages = metrics.get("stages")
    if not isinstance(stages, dict):
        return []
    points = []
    for stage, error in stages.items():
        key, fraction = _STAGE_STEP.get(stage, (None, 1.0))
        step = _largest(metrics.get(key)) if key else None
        if step is None or not isinstance(error, (int, float)) or isinstance(error, bool) \
                or not math.isfinite(error) or error <= 0:
            continue
        points.append((stage, step * fraction, float(error)))
    return points


def _decades(values: list[float]) -> tuple[int, int]:
    lo, hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    return lo, max(hi, lo + 1)


def step_plot(metrics: dict, width: int = 260, height: int = 150) -> Markup | None:
    """The plot, or None when fewer than two stages were recorded (one point says nothing about a trend)."""
    points = stage_points(metrics)
    if len(points) < 2:
        return None
    x_lo, x_hi = _decades([p[1] for p in points])
    y_lo, y_hi = _decades([p[2] for p in points] + [1.0])        # the tolerance line is always shown
    y_labels = [f"1e{e}" for e in (y_lo, y_hi)]
    left = round(16 + max(text_width(t) for t in y_labels))
    right, top, bottom = 12, 8, 30
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(step: float) -> float:
        return left + (math.log10(step) - x_lo) / (x_hi - x_lo) * plot_w

    def py(error: float) -> float:
        return top + plot_h - (math.log10(error) - y_lo) / (y_hi - y_lo) * plot_h

    parts = [f'<svg class="plot steps" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'role="img" aria-label="finite-difference error against step, per refinement stage">',
             f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="frame"/>',
             f'<line x1="{left}" y1="{py(1.0):.1f}" x2="{left + plot_w}" y2="{py(1.0):.1f}" class="diag">'
             f'<title>tolerance: a stage below this line passed</title></line>']
    path = " ".join(f"{px(s):.1f},{py(e):.1f}" for _, s, e in sorted(points, key=lambda p: p[1]))
    parts.append(f'<polyline points="{path}" class="trend"/>')
    # Neighbouring stages sit close (h and h/2): their names go above and below in turn.
    for k, (stage, step, error) in enumerate(sorted(points, key=lambda p: p[1])):
        x, y = px(step), py(error)
        anchor, dx = ("end", -4) if x - 4 + text_width(stage) > width else ("start", -4)
        dy = -6 if k % 2 == 0 else 13
        if not top + 8 <= y + dy <= top + plot_h:           # keep the name inside the frame
            dy = 13 if dy < 0 else -6
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" class="pt{" ok" if error <= 1 else ""}">'
                     f'<title>{escape(stage)}: step {step:.3g}, error {error:.3g} x tolerance</title></circle>'
                     f'<text x="{x + dx:.1f}" y="{y + dy:.1f}" class="tick" text-anchor="{anchor}">{escape(stage)}</text>')
    base = top + plot_h
    parts += [f'<text x="{left - 3}" y="{base}" class="tick" text-anchor="end">{y_labels[0]}</text>',
              f'<text x="{left - 3}" y="{top + 8}" class="tick" text-anchor="end">{y_labels[1]}</text>',
              f'<text x="{left}" y="{base + 11}" class="tick">1e{x_lo}</text>',
              f'<text x="{left + plot_w}" y="{base + 11}" class="tick" text-anchor="end">1e{x_hi}</text>',
              f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" class="axis" text-anchor="middle">step</text>',
              f'<text x="10" y="{top + plot_h / 2:.0f}" class="axis" text-anchor="middle" '
              f'transform="rotate(-90 10 {top + plot_h / 2:.0f})">error / tol</text>',
              '</svg>']
    return Markup("".join(parts))
