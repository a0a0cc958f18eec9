"""A stored traceback: the outermost frames (how the run got there) and the innermost (the raising line).

`traceback.format_exc(limit=n)` keeps the first n frames only, so a deep failure (one raised inside the
engine's lowering, twenty frames below the runner) was stored without the line that raised it. This
keeps both ends and says how many frames in between were left out. Chained exceptions (`raise ... from`)
are formatted the same way, each with both ends.
"""
from __future__ import annotations

import traceback

OUTER_FRAMES = 4
INNER_FRAMES = 8


def _frames(tb: traceback.TracebackException, outer: int, inner: int) -> list[str]:
    stack = list(tb.stack)
    if len(stack) <= outer + inner:
        return traceback.StackSummary.from_list(stack).format()
    left_out = len(stack) - outer - inner
    return (traceback.StackSummary.from_list(stack[:outer]).format()
            + [f"  ... {left_out} frame{'s' if left_out != 1 else ''} left out ...\n"]
            + traceback.StackSummary.from_list(stack[-inner:]).format())


def _format(tb: traceback.TracebackException, outer: int, inner: int, seen: set) -> list[str]:
    seen.add(id(tb))
    lines: list[str] = []
    if tb.__cause__ is not None and id(tb.__cause__) not in seen:
        lines += _format(tb.__cause__, outer, inner, seen)
        lines.append("\nThe above exception was the direct cause of the following exception:\n\n")
    elif (tb.__context__ is not None and not tb.__suppress_context__ and id(tb.__context__) not in seen):
        lines += _format(tb.__context__, outer, inner, seen)
        lines.append("\nDuring handling of the above exception, another exception occurred:\n\n")
    if tb.stack:
        lines.append("Traceback (most recent call last):\n")
        lines += _frames(tb, outer, inner)
    lines += list(tb.format_exception_only())
    return lines


def format_both_ends(exc: BaseException, outer: int = OUTER_FRAMES, inner: int = INNER_FRAMES) -> str:
    """The traceback of `exc` (and of its causes) with its outermost and innermost frames kept."""
    tb = traceback.TracebackException.from_exception(exc)
    return "".join(_format(tb, outer, inner, set()))
