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

The block stage is the expensive part at scale (measured on an H200 with
benchmarks/stage_costs.py, Horner with four Duplicated coefficients at 2^26: 0.42 ms without the
reduction, 0.45 ms with the warp stage alone, 1.14 ms when four threads then added up the block's
warp sums one after another), so warp 0 sums them in parallel, with the same reduce-scatter.
"""
from __future__ import annotations

from harness.engine.emission.emit_state import EmitState

OFFSETS = (16, 8, 4, 2, 1)


def active_reduction(em: EmitState, actives: list[str], slots: list[tuple[str, str, str]] = (),
                     values: list[str] | None = None):
    """Sum each Active scalar's per-thread adjoint and each uniform-index register over the launch.
    All sums share one barrier; warp 0 then reduce-scatters the warps' sums the same way and lane
    k * stride adds sum k (blocks of other sizes: thread k adds up sum k over the warps); one
    atomic statement per sum. `values`: the registers holding the actives' adjoints (per active,
    per lane), when not their adjoint registers (a coarsened kernel's accumulators)."""
    out = em.prefix + "active_out"
    values = values or [f"float64({em.d(a, j)})" for a in actives for j in em.lanes()]
    sums = [(v, out, str(k)) for k, v in enumerate(values)]
    sums += [(reg, shadow, idx) for reg, shadow, idx in slots]
    what = " and ".join(w for w, on in (("Active scalars", actives), ("uniform-index reads", slots)) if on)
    em.line(f"# {what}: warp sums, block sums in shared memory, one atomic per block")
    em.line(f"_red = cuda.shared.array(({len(sums)}, 32), float64)")
    em.line("_tlin = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)")
    em.line("_nthreads = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z")
    if slots:
        em.line("_blin = cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z)")
    names = [f"_v{k}" for k in range(len(sums))]
    groups = [(first, names[first:first + 32]) for first in range(0, len(names), 32)]
    for name, (value, _, _) in zip(names, sums):
        em.line(f"{name} = {value}")
    em.line("_full = _nthreads % 32 == 0   # every warp full: block-uniform")
    em.line("if _full:")
    em.depth += 1
    em.line("_m = uint32(0xFFFFFFFF)")
    for first, group in groups:
        held, stride = warp_reduce_scatter(em, group)
        em.line(f"if cuda.laneid % {stride} == 0 and cuda.laneid // {stride} < {len(group)}:")
        em.line(f"    _red[{first} + cuda.laneid // {stride}, _tlin // 32] = {held}")
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
    em.barrier()
    em.line("if _full and _tlin < 32:   # warp 0 sums the warps' sums, lane w holding warp w's")
    em.depth += 1
    for k, name in enumerate(names):
        em.line(f"{name} = _red[{k}, _tlin] if _tlin < _nthreads // 32 else float64(0.0)")
    strides = {}
    for first, group in groups:
        held, strides[first] = warp_reduce_scatter(em, group)
    em.depth -= 1
    # one atomic statement per sum: its writer is lane k * stride of warp 0 in a full block,
    # thread k (which adds the warps' sums up itself) in a block of another size
    for k, (_, target, index) in enumerate(sums):
        first = k - k % 32
        held = names[first]
        em.line(f"if _tlin == ({(k - first) * strides[first]} if _full else {k} % _nthreads):")
        em.line("    if not _full:")
        em.line(f"        {held} = float64(0.0)")
        em.line("        for _w in range((_nthreads + 31) // 32):")
        em.line(f"            {held} += _red[{k}, _w]")
        em.line("    " + em.emitters["block-sum"](em, target, index, held))


def warp_reduce_scatter(em: EmitState, group: list[str]) -> tuple[str, int]:
    """Reduce up to 32 sums over a full warp (mask `_m`). Returns the register holding each lane's
    sum and the stride: sum k of the group ends in lanes k * stride .. k * stride + stride - 1."""
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
    return held[0], 32 // width


def warp_butterfly_partial(em: EmitState, name: str):
    """A butterfly over the lanes present in `_m`: an absent partner contributes nothing."""
    for off in OFFSETS:
        em.line(f"_o = cuda.shfl_xor_sync(_m, {name}, {off})")
        em.line(f"if (_m >> (cuda.laneid ^ {off})) & 1:")
        em.line(f"    {name} += _o")
