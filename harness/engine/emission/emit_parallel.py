"""Emitting what threads share: shadows of shared and local arrays and the adjoints of warp
shuffles (the end-of-kernel reduction is emit_reduce.py's). Functions over the emit state (emit_state.py).
"""
from __future__ import annotations

from harness.engine.emission.emit_state import EmitState
from harness.engine.ir.ssa import Alloc, Assign, Barrier
from harness.engine.emission.syntax import atom, index_text


# The shuffle that carries the adjoint of each directed shuffle: the other direction.
OPPOSITE_SHUFFLE = {"shfl_down": "shfl_up_sync", "shfl_up": "shfl_down_sync"}


def alloc_text(em: EmitState, p, name: str) -> str:
    shape = p.shape[0] if len(p.shape) == 1 else tuple(p.shape)
    return f"{name} = cuda.{p.kind}.array({shape}, {p.dtype})"


def shadow_alloc(em: EmitState, s: Alloc, zero: bool, fenced: bool = True):
    """The shadow of a kernel-allocated array (shared arrays get a shared shadow). A shared
    shadow's zeroing ends with a barrier unless `fenced` is False: a later barrier that every
    thread reaches first orders it (zeroing_ordered_later)."""
    p = s.array
    if p.name not in em.diff_arrays:
        return
    size = 1
    for n in p.shape:
        size *= n
    for j in em.lanes():
        em.line(alloc_text(em, p, em.d(p.name, j)))
    if not zero:
        return
    if p.kind == "shared":
        em.line("_tlin = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)")
        em.line(f"for _z in range(_tlin, {size}, cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z):")
    else:
        em.line(f"for _z in range({size}):")
    strides, acc = [], 1
    for n in reversed(p.shape):
        strides.append(acc)
        acc *= n
    strides.reverse()
    idx = ", ".join(f"(_z // {st}) % {n}" for st, n in zip(strides, p.shape)) if len(p.shape) > 1 else "_z"
    for j in em.lanes():
        em.line(f"    {em.d(p.name, j)}[{idx}] = 0")
    if p.kind == "shared" and fenced:
        em.barrier("   # every shadow element is zero before any thread accumulates")


def zeroing_ordered_later(em: EmitState, s: Alloc, stmts) -> bool:
    """Whether a shared shadow zeroed at `s`, in a reverse kernel's forward sweep, needs no barrier
    of its own: `s` is in the kernel's top-level body and a block barrier follows it there, which
    every thread reaches before the reverse sweep first touches the shadow. The forward sweep
    touches no shadow, but for the early reads of thread-owned shadows (emit_prefetch.py), so an
    owned array keeps its barrier; so do device functions (whose callers' barriers are unknown)
    and block-coarsened kernels (where the next virtual block zeroes what a slower thread may
    still read)."""
    if stmts is not em.ir.body or em.ir.param_forms is not None or em.sig.coarsen or em.virtual_blocks:
        return False
    if s.array.name in em.sig.owned:
        return False
    after = list(stmts)[next(k for k, t in enumerate(stmts) if t is s) + 1:]
    return any(isinstance(t, Barrier) and not t.warp for t in after)


def atomic_index(em: EmitState, index) -> str:
    idx = index_text(index)
    return idx if len(index) == 1 else f"({idx})"    # numba wants a bare index in 1-D


def reverse_shuffle(em: EmitState, s: Assign, lane: int, opposite: dict | None = None):
    """The adjoint of a shuffle is a shuffle the other way (boundary lanes keep their own);
    `opposite` names the shuffle that carries each direction's adjoint (OPPOSITE_SHUFFLE)."""
    opposite = OPPOSITE_SHUFFLE if opposite is None else opposite
    e = s.expr
    mask, k = atom(e.args[0]), atom(e.args[2])
    if not em.is_varied(e.args[1]):
        return
    dv, dt = em.d(e.args[1], lane), em.d(s.target, lane)
    zero = f"{em.ftype(s.target)}(0.0)"
    if e.op == "shfl_xor":
        em.line(f"{dv} += cuda.shfl_xor_sync({mask}, {dt}, {k})")
    elif e.op == "shfl_down":
        em.line(f"_u = cuda.{opposite['shfl_down']}({mask}, {dt}, {k})")
        em.line(f"{dv} += (_u if cuda.laneid >= {k} else {zero}) + ({dt} if cuda.laneid + {k} >= 32 else {zero})")
    elif e.op == "shfl_up":
        em.line(f"_u = cuda.{opposite['shfl_up']}({mask}, {dt}, {k})")
        em.line(f"{dv} += (_u if cuda.laneid + {k} < 32 else {zero}) + ({dt} if cuda.laneid < {k} else {zero})")
    else:                                  # broadcast from lane k: lane k gathers the warp's sum
        em.line(f"_u = {dt}")
        for off in (16, 8, 4, 2, 1):
            em.line(f"_u += cuda.shfl_xor_sync({mask}, _u, {off})")
        em.line(f"{dv} += _u if cuda.laneid == {k} else {zero}")
