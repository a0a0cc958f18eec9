"""Array views as numba.cuda makes them: `a[i]` of a 2-d array, `a[i, :]`, `a[:, j]`, and windows
such as `a[i - 1:i + 2, j - 1:j + 2]` passed to a device function or bound to a name.

A view never copies: it names its kernel array and says, for the array's leading dimensions, how
the view's own indices reach the array's. That description (`LoweringState.views[name]`) is a
tuple with one entry per leading dimension of the array:

- an index atom: the dimension is fixed at that index (`a[i, :]` fixes dimension 0 at i);
- a `Window`: the dimension is sliced; the view's next index k reads the array at
  `start + k * step`, and the view is `extent` long there;

and the array's dimensions after the tuple are whole (the view indexes them as the array does).
A view of fixed leading indices only, the common row, is therefore the tuple of those indices.

numba's meaning is kept exactly: slice bounds are normalised as Python does (a negative bound
counts from the end, then both are clamped to the dimension), and a negative index into a sliced
dimension counts from the end of the view, not of the array. Index arithmetic is branch-free
(a comparison cast to an integer), so a view adds no control flow for the analyses to follow.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.engine.ir.ssa import Lit, Prim, Special


@dataclass(frozen=True)
class Window:
    """A sliced dimension of a view: view index k is array index start + k * step, for
    0 <= k < extent (start, extent: atoms; step: a nonzero int, negative for `a[::-1]`)."""
    start: object
    extent: object
    step: int = 1


def fixed_count(entries: tuple) -> int:
    """How many of the array's dimensions the view fixes (its rank is the array's less these)."""
    return sum(not isinstance(e, Window) for e in entries)


def has_windows(entries: tuple) -> bool:
    return any(isinstance(e, Window) for e in entries)


def dimension_size(st, array: str, ndim: int, entries: tuple, k: int, out):
    """The atom of the view's k-th dimension's length."""
    for e, d in _view_dimensions(ndim, entries):
        if k == 0:
            return e.extent if isinstance(e, Window) else st.emit_assign(out, st.temp(), Special(f"shape.{array}.{d}"))
        k -= 1
    raise IndexError(k)


def _view_dimensions(ndim: int, entries: tuple):
    """(Window or None, array dimension) for each dimension of the view, in order."""
    for d in range(ndim):
        e = entries[d] if d < len(entries) else None
        if e is None or isinstance(e, Window):
            yield e, d


def array_index(st, entries: tuple, view_index: tuple, out) -> tuple:
    """The array's full index for the view's `view_index` (one atom per view dimension)."""
    rest = iter(view_index)
    index = []
    for e in entries:
        index.append(_through(st, e, next(rest), out) if isinstance(e, Window) else e)
    return tuple(index) + tuple(rest)


def _through(st, w: Window, k, out):
    """The array index view index k of window w reads: start + wrap(k) * step."""
    k = wrap(st, k, w.extent, out)
    if isinstance(k, Lit) and k.value == 0:
        return w.start
    if w.step != 1:
        k = _emit(st, out, "mul", k, Lit(w.step))
    if isinstance(w.start, Lit) and w.start.value == 0:
        return k
    return _emit(st, out, "add", w.start, k)


def wrap(st, k, length, out):
    """k, or k + length where k < 0 (numba's wraparound of a negative index)."""
    if isinstance(k, Lit) and k.value >= 0:
        return k
    negative = _emit(st, out, "cast_int64", _emit(st, out, "lt", k, Lit(0)))
    return _emit(st, out, "add", k, _emit(st, out, "mul", negative, length))


def window(st, base: Window | None, size, lower, upper, step: int, out) -> Window:
    """The window `lower:upper:step` (atoms or None; step a nonzero int) of a dimension `size`
    long that is itself `base` of the array (None: the whole dimension), with Python's bound rules
    (slice.indices): a negative step walks down from `lower` (default the last index) to above
    `upper` (default: past index 0), both clamped to -1 .. size - 1."""
    if step < 0:
        last = _emit(st, out, "sub", size, Lit(1))
        lo = last if lower is None else _clamp(st, wrap(st, lower, size, out), last, out, floor=-1)
        hi = Lit(-1) if upper is None else _clamp(st, wrap(st, upper, size, out), last, out, floor=-1)
        span = _emit(st, out, "sub", lo, hi)
    else:
        lo = Lit(0) if lower is None else _clamp(st, wrap(st, lower, size, out), size, out)
        hi = size if upper is None else _clamp(st, wrap(st, upper, size, out), size, out)
        span = hi if isinstance(lo, Lit) and lo.value == 0 else _emit(st, out, "sub", hi, lo)
    if abs(step) != 1:                             # ceil(span / |step|) elements
        span = _emit(st, out, "floordiv", _emit(st, out, "add", span, Lit(abs(step) - 1)), Lit(abs(step)))
    extent = span if lower is None and upper is None and abs(step) == 1 else _emit(st, out, "max", span, Lit(0))
    if base is None:
        return Window(lo, extent, step)
    start = lo if base.step == 1 else _emit(st, out, "mul", lo, Lit(base.step))
    if not (isinstance(base.start, Lit) and base.start.value == 0):
        start = _emit(st, out, "add", base.start, start)
    return Window(start, extent, base.step * step)


def _clamp(st, x, size, out, floor: int = 0):
    return _emit(st, out, "min", _emit(st, out, "max", x, Lit(floor)), size)


def _emit(st, out, op, *args):
    return st.emit_assign(out, st.temp(), Prim(op, args))
