"""A store's adjoint zeroes the shadow element it consumes; when a read of the same element, later
in the same straight run of the reverse sweep, adds its adjoint back, one store does both.

In the reverse of an in-place update `sh[t] = f(sh[t], sh[t + s])` (a tree level) the store's
adjoint reads `dsh[t]` and zeroes it, and the adjoint of the read of `sh[t]` then adds into the
element it has just zeroed: a load and two stores where one store of the added value does the
same (0 + v is exactly v). For an array whose shadow takes plain read-modify-writes (each element
one thread's own, for the whole launch or between two barriers: no other thread touches it in
between), the zeroing line is written as before and remembered; an add at the same index later in
the run removes it and becomes `dsh[t] = v`. The zero stays where the fold could be wrong:
- another access of the array's shadow in the run that is not proven to touch another element
  (ordering.apart_in_thread: `dsh[t + s]` with s > 0 is apart from `dsh[t]`) comes first;
- an adjoint that is not arithmetic, a read's accumulation or a store's adjoint (control flow,
  barriers, loops, atomics, shuffles) comes first, or the block ends: the run ends.
So a kernel without such a pair keeps its text, and a fold never crosses a block boundary.
"""
from __future__ import annotations

from harness.engine.emission.emit_state import EmitState


def defer(em: EmitState, shadow: str, index: str, site):
    """`shadow[index] = 0`, remembered: a later add at the index may take its place."""
    em.line(f"{shadow}[{index}] = 0")
    em.zero_pending[(shadow, index)] = (site, len(em.lines) - 1)


def fold(em: EmitState, shadow: str, index: str, value: str, site) -> bool:
    """`shadow[index] += value` where the element's zeroing is remembered: the zero line goes and
    this is `= value`; True. Remembered zeros of other elements that `site` (a statement; None:
    unknown) may touch are kept."""
    release(em, shadow, site, keep=index)
    pending = em.zero_pending.pop((shadow, index), None)
    if pending is None:
        return False
    line = pending[1]
    del em.lines[line]
    em.zero_pending = {k: (p, n - (n > line)) for k, (p, n) in em.zero_pending.items()}
    em.line(f"{shadow}[{index}] = {value}")
    return True


def release(em: EmitState, shadow: str, site, keep: str | None = None):
    """Keep the zeros of `shadow` that an access by statement `site` (None: unknown) may touch,
    except the one at index `keep`: they can no longer be folded."""
    for (name, index), (pending, _) in list(em.zero_pending.items()):
        if name != shadow or index == keep:
            continue
        if site is None or frozenset((id(site), id(pending))) not in em.sig.apart:
            del em.zero_pending[(name, index)]


def flush(em: EmitState):
    """The run ends: every remembered zero stays."""
    em.zero_pending.clear()
