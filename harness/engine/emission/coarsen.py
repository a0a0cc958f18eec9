"""Block coarsening of reverse kernels that end in a reduction (emit_reduce.py: Active scalars and
uniform-index reads, emit_uniform.py).

The reduction through the warp and the block costs the same per block however little the block
summed: on an H200 (Horner with four Duplicated coefficients, 2^26 float32, 262,144 blocks of 256)
the block stage alone took about 0.3 ms of a 0.77 ms reverse whose Const twin takes 0.41 ms. So the
kernel is launched on a capped 1-D physical grid of P blocks (physical_blocks: as many as fit on the
device at once, at most the engine option coarsen_blocks_per_sm per multiprocessor; SIM_BLOCKS on a
backend without a device), and each physical block runs the kernel body for the virtual blocks
vb = blockIdx.x, blockIdx.x + P, ... < B (B the real launch's block count), with every launch index
(blockIdx, gridDim, cuda.grid, cuda.gridsize) reading the virtual block's values. The per-thread
sums persist across virtual blocks, and the reduction and its atomics run once, after the loop:
its cost is paid per physical block.

Why this is exact:
- everything a thread computes for a virtual block is recomputed in its iteration (the forward
  sweep's registers, the adjoint registers, the `_live` flag of an early `return`, which the front
  end lowers to a flag and guards, control.py): only the reduction's accumulators carry over. An
  Active scalar's adjoint register is reset per virtual block, so it is added to its own
  accumulator at the end of each iteration;
- the loop's bounds depend only on the block, so every thread of a block runs the same iterations
  and the barriers inside stay legal; a kernel with shared arrays ends each iteration with a
  barrier, so the next virtual block does not overwrite (zero, store) shared memory a slower
  thread of the previous one still reads;
- a multi-dimensional grid is decomposed from the linear virtual id (x fastest), on a 1-D
  physical grid.

Kernels the coarsened form is not proven for keep one block per block (`refusal` says why):
warp shuffles (a lane's shuffle must meet its partners' in the same virtual block, which holds only
when every shuffle is reached by all the lanes it names), atomic max/min (their winner passes
compare real thread ids), gathered stencil adjoints (they replay other threads by global index),
device-side autodiff.
"""
from __future__ import annotations

import math

from harness.engine.analyses.activity import DIFFERENTIABLE, SHUFFLES
from harness.engine.emission.emit_state import EmitState, differentiable_arrays
from harness.engine.emission.emit_uniform import uniform_slots
from harness.engine.ir.ssa import Assign, Atomic, EXTREMA, KernelIR, Nested, Prim, Special, walk
from harness.engine.emission.syntax import expr_text
from harness.engine.ir.types import is_float

SIM_BLOCKS = 2      # the physical grid on the simulator: small, so the loop over virtual blocks runs
AXES = "xyz"
GRID_PARAMS = ("_vgx", "_vgy", "_vgz")     # the real launch's grid, passed after every other argument


def refusal(ir: KernelIR, activity: dict, owned, gather: dict, mode: str) -> str | None:
    """Why the reverse kernel of `ir` keeps one physical block per block, or None to coarsen it."""
    if mode != "reverse":
        return "only reverse kernels end in a reduction"
    actives = [p for p in ir.params if p.kind == "scalar" and activity.get(p.name) in DIFFERENTIABLE
               and is_float(p.dtype)]
    if not actives and not uniform_slots(ir, differentiable_arrays(ir, activity), frozenset(owned)):
        return "no end-of-kernel reduction"
    if gather:
        return "gathered adjoints replay other threads by their global index"
    for s in walk(ir.body):
        if isinstance(s, Atomic) and s.op in EXTREMA:
            return "atomic max/min winners are found by real thread id"
        if isinstance(s, Assign) and isinstance(s.expr, Prim) and s.expr.op in SHUFFLES:
            return "warp shuffles"
        if isinstance(s, Nested):
            return "device-side autodiff"
    return None


def axes(shape) -> int:
    """Grid axes the virtual block id is decomposed into: those the launch shape (ownership.
    LaunchShape: the dimensions with more than one thread) may give more than one block. A 1-D
    launch then needs no integer division per virtual block (64-bit division is dozens of
    instructions, against a memory-bound body's few per element)."""
    return max(shape.dims, default=0) + 1


def physical_blocks(backend, blocks: int, blocks_per_sm: int, compiled=None, block: tuple = (1,)) -> int:
    """The physical grid of a coarsened launch of `blocks` blocks: at most blocks_per_sm per
    multiprocessor and at most what fits on the device at once (one wave: a second, partial wave
    would run its blocks' many virtual blocks after the others finished), at least 1."""
    sms = backend.multiprocessors()
    if sms is None:
        return max(1, min(blocks, SIM_BLOCKS))
    cap = blocks_per_sm * sms
    resident = backend.resident_blocks(compiled, block) if compiled is not None else None
    if resident:
        cap = min(cap, resident)
    return max(1, min(blocks, cap))


def grid_args(grid: tuple) -> list[int]:
    """The GRID_PARAMS of a launch: its grid, padded to three dimensions."""
    return [int(g) for g in tuple(grid) + (1,) * (3 - len(grid))]


def special_text(e: Special) -> str:
    """A launch index of the virtual block `_vb{x,y,z}` in the virtual grid `_vg{x,y,z}`."""
    kind, _, rest = e.name.partition(".")
    if kind == "bid":
        return f"_vb{rest}"
    if kind == "gdim":
        return f"_vg{rest}"
    if kind == "grid":
        a = AXES[int(rest)]
        return f"_vb{a} * cuda.blockDim.{a} + cuda.threadIdx.{a}"
    if kind == "gsize":
        a = AXES[int(rest)]
        return f"_vg{a} * cuda.blockDim.{a}"
    return expr_text(e)


def active_registers(em: EmitState, actives: list[str]) -> list[str]:
    return [f"_act{k}_{j}" for k in range(len(actives)) for j in em.lanes()]


def open_loop(em: EmitState, actives: list[str]):
    """Before the body: the accumulators, then the loop over virtual blocks."""
    for reg in active_registers(em, actives):
        em.line(f"{reg} = float64(0.0)")
    em.line("# block coarsening: this block runs blocks blockIdx.x, blockIdx.x + gridDim.x, ... of the real")
    em.line("# grid (_vg*), so the reduction after the loop is paid once per physical block, not per block")
    em.line("for _vb in range(cuda.blockIdx.x, _vgx * _vgy * _vgz, cuda.gridDim.x):")
    em.depth += 1
    n = em.sig.coarsen                    # grid axes (axes(): a plan is built per launch shape)
    em.line("_vbx = _vb" if n == 1 else "_vbx = _vb % _vgx")
    em.line("_vby = 0" if n == 1 else "_vby = _vb // _vgx" if n == 2 else "_vby = _vb // _vgx % _vgy")
    em.line("_vbz = _vb // (_vgx * _vgy)" if n == 3 else "_vbz = 0")


def close_loop(em: EmitState, actives: list[str]) -> list[str]:
    """After the body: Active adjoints into their accumulators, the barrier that protects shared
    memory, the end of the loop. Returns the accumulators (the reduction's values of the actives)."""
    regs = active_registers(em, actives)
    names = [em.d(a, j) for a in actives for j in em.lanes()]
    for reg, name in zip(regs, names):
        em.line(f"{reg} += float64({name})")
    if any(p.kind == "shared" for p in em.ir.local_arrays):
        em.barrier("   # the next virtual block reuses the shared arrays")
    em.depth -= 1
    return regs


def block_count(grid: tuple) -> int:
    return math.prod(grid_args(grid))
