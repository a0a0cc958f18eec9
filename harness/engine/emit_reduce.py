"""The end-of-kernel reduction of per-thread sums: Active scalars' adjoints and the registers of
uniform-index reads (emit_uniform.py). One atomic per thread on a handful of addresses serialises
(hundreds of times slower at scale), so the sums go through the warp, then the block's shared
memory, then one atomic add per block and sum.

The warp stage is a reduce-scatter: at each butterfly step a lane keeps half of its sums and sends
the other half to its partner, so S sums cost S - 1 + (5 - log2 S) shuffles instead of 5 S, and
sum k ends in lane k * 32 / S. That needs every lane of the warp, so it is taken when the block
size is a multiple of 32 (a block-uniform choice: the simulator's shuffles are block-synchronous);
other blocks take the plain butterfly, which skips the lanes their last warp lacks. The masks name
the lanes that exist rather than `activemask()`, which may name fewer where a warp has not
reconverged after a branch.
"""
from __future__ import annotations

from .emit_state import EmitState

OFFSETS = (16, 8, 4, 2, 1)


def active_reduction(em: EmitState, actives: list[str], slots: list[tuple[str, str, str]] = ()):
    """Sum each Active scalar's per-thread adjoint and each uniform-index register over the launch.
    All sums share one barrier, and thread k finishes sum k, so several cost little more than one."""
    out = em.prefix + "active_out"
    sums = [(f"float64({em.d(a, j)})", out, str(k * em.sig.width + j))
            for k, a in enumerate(actives) for j in em.lanes()]
    sums += [(reg, shadow, idx) for reg, shadow, idx in slots]
    what = " and ".join(w for w, on in (("Active scalars", actives), ("uniform-index reads", slots)) if on)
    em.line(f"# {what}: warp sums, block sums in shared memory, one atomic per block")
    em.line(f"_red = cuda.shared.array(({len(sums)}, 32), float64)")
    em.line("_tlin = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)")
    em.line("_nthreads = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z")
    if slots:
        em.line("_blin = cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z)")
    names = [f"_v{k}" for k in range(len(sums))]
    for name, (value, _, _) in zip(names, sums):
        em.line(f"{name} = {value}")
    em.line("if _nthreads % 32 == 0:")
    em.depth += 1
    em.line("_m = uint32(0xFFFFFFFF)")
    for first in range(0, len(names), 32):
        warp_reduce_scatter(em, names[first:first + 32], first)
    em.depth -= 1
    em.line("else:")
    em.depth += 1
    em.line("_m = uint32((1 << min(32, _nthreads - _tlin // 32 * 32)) - 1)   # the lanes this warp has")
    for name in names:
        warp_butterfly_partial(em, name)
    em.line("if cuda.laneid == 0:")
    for k, name in enumerate(names):
        em.line(f"    _red[{k}, _tlin // 32] = {name}")
    em.depth -= 1
    em.line("cuda.syncthreads()")
    for k, (_, target, index) in enumerate(sums):
        em.line("if _tlin == 0:" if k == 0 else f"if _tlin == {k} % _nthreads:   # blocks may be smaller")
        em.line("    _s = float64(0.0)")
        em.line("    for _w in range((_nthreads + 31) // 32):")
        em.line(f"        _s += _red[{k}, _w]")
        em.line("    " + em.emitters["block-sum"](em, target, index, "_s"))


def warp_reduce_scatter(em: EmitState, group: list[str], first: int):
    """Reduce up to 32 sums over a full warp; sum k of the group lands in lane k * stride and is
    written to the block's row first + k."""
    width = 1
    while width < len(group):
        width *= 2
    held = group + ["float64(0.0)"] * (width - len(group))     # padding is only ever sent
    for off in OFFSETS:
        if len(held) == 1:
            em.line(f"{held[0]} += cuda.shfl_xor_sync(_m, {held[0]}, {off})")
            continue
        half = len(held) // 2
        em.line(f"_hi = (cuda.laneid & {off}) != 0   # keep the upper half, send the lower")
        for lo, hi in zip(held[:half], held[half:]):
            em.line(f"_o = cuda.shfl_xor_sync(_m, {lo} if _hi else {hi}, {off})")
            em.line(f"{lo} = ({hi} if _hi else {lo}) + _o")
        held = held[:half]
    stride = 32 // width
    em.line(f"if cuda.laneid % {stride} == 0 and cuda.laneid // {stride} < {len(group)}:")
    em.line(f"    _red[{first} + cuda.laneid // {stride}, _tlin // 32] = {held[0]}")


def warp_butterfly_partial(em: EmitState, name: str):
    """A butterfly over the lanes present in `_m`: an absent partner contributes nothing."""
    for off in OFFSETS:
        em.line(f"_o = cuda.shfl_xor_sync(_m, {name}, {off})")
        em.line(f"if (_m >> (cuda.laneid ^ {off})) & 1:")
        em.line(f"    {name} += _o")
