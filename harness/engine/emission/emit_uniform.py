"""Adjoints of reads at thread-invariant indices (weights, coefficients, stencil taps, a bias).

Every thread reads `w[0]`, so in reverse every thread adds into `dw[0]`: one atomic per thread on a
handful of addresses serialises (measured on an H200: 471 ms for a Horner reverse whose Const twin
takes 0.41 ms). Instead each thread sums its contributions to such a slot in a register, and the
end of the kernel reduces the registers through the warp and the block and adds one value per block,
as for Active scalars. Exact only when nothing else touches the shadow during the launch, so a slot
is taken only for an array the kernel never writes; its index must be literal integers.

One atomic per block still serialises at scale (2^18 blocks on one address cost about 0.3 ms on an
H200), so each block adds into one of SPREAD copies of its slot (chosen by block id), and a second,
one-warp kernel (`<kernel>__reverse_finish`, same parameters) adds the copies to the shadow and
zeroes them: the kernel boundary orders every block's atomics before the sum is read.
"""
from __future__ import annotations

from harness.engine.emission.emit_state import EmitState, differentiable_arrays
from harness.engine.ir.ssa import Assign, Atomic, Lit, Load, Store, walk

SPREAD = 64     # copies of each slot that the blocks' sums are spread over
FINISH_LANES = 32   # the finish kernel is one warp


def uniform_slots(ir, diff_arrays: set[str], owned: frozenset) -> dict[tuple, int]:
    """(array, literal index) -> slot number, for loads whose adjoint would be a contended atomic."""
    written = {s.array for s in walk(ir.body) if isinstance(s, (Store, Atomic))}
    slots: dict[tuple, int] = {}
    for s in walk(ir.body):
        if not (isinstance(s, Assign) and isinstance(s.expr, Load)):
            continue
        e = s.expr
        if e.array not in diff_arrays or e.array in owned or e.array in written:
            continue
        if all(isinstance(a, Lit) and isinstance(a.value, int) and not isinstance(a.value, bool)
               for a in e.index):
            slots.setdefault((e.array, tuple(a.value for a in e.index)), len(slots))
    return slots


def slot_count(ir, activity: dict, owned: frozenset, width: int) -> int:
    """Scratch slots a reverse kernel needs (the launcher allocates SPREAD doubles per slot)."""
    return len(uniform_slots(ir, differentiable_arrays(ir, activity), owned)) * width


def slot_register(em: EmitState, array: str, index, lane: int) -> str | None:
    key = (array, tuple(a.value if isinstance(a, Lit) else a for a in index))
    k = em.uniform.get(key)
    return None if k is None else f"_acc{k}_{lane}"


def slot_inits(em: EmitState):
    for k in range(len(em.uniform)):
        for j in em.lanes():
            em.line(f"_acc{k}_{j} = float64(0.0)")


def slot_targets(em: EmitState) -> list[tuple[str, str, str]]:
    """(register, spread buffer, index text) per slot and lane, for the block reduction."""
    spread = em.prefix + "uniform_spread"
    return [(f"_acc{k}_{j}", spread, f"{(k * em.sig.width + j) * SPREAD} + _blin % {SPREAD}")
            for k in range(len(em.uniform)) for j in em.lanes()]


def finish_text(em: EmitState, fname: str, params: list[str]) -> str:
    """The one-warp kernel that folds each slot's copies into its shadow element: each lane sums
    SPREAD / 32 copies, the warp sums the lanes, lane 0 adds the total (a single thread would wait
    on SPREAD loads in a row per slot)."""
    spread = em.prefix + "uniform_spread"
    lines = [f"def {fname}({', '.join(params)}):",
             "    # uniform-index adjoints: add each slot's spread copies to the shadow, zero them",
             "    _l = cuda.threadIdx.x"]
    for (array, index), k in em.uniform.items():
        idx = str(index[0]) if len(index) == 1 else "(" + ", ".join(map(str, index)) + ")"
        for j in em.lanes():
            base = (k * em.sig.width + j) * SPREAD
            lines += ["    _s = float64(0.0)",
                      f"    for _c in range({base} + _l, {base + SPREAD}, {FINISH_LANES}):",
                      f"        _s += {spread}[_c]",
                      f"        {spread}[_c] = 0.0"]
            lines += [f"    _s += cuda.shfl_xor_sync(uint32(0xFFFFFFFF), _s, {off})" for off in (16, 8, 4, 2, 1)]
            lines += ["    if _l == 0:",
                      f"        {em.d(array, j)}[{idx}] += _s"]
    return "\n".join(lines) + "\n"
