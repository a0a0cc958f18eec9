"""Reads whose adjoint the lanes of a block row, or of a block column, add into one address.

In reverse, a read `x[...]` becomes `dx[...] += v`, an atomic when other threads may touch the same
element. When the index does not depend on threadIdx.x (`sa[ty, j]` in a tiled matrix product,
`sp[k, 0]` in an n-body tile loop), all the threads of a block row add into one address at once:
up to 32 lanes of a warp contend for it, and the hardware serialises them. Those lanes can sum
their contributions with warp shuffles first and let one of them add the total (emit_lane_sums.py).
The same holds along y when the index does not depend on threadIdx.y (`sb[j, tx]`: the lanes of a
warp that hold several rows of a narrow block share it).

A read qualifies, along axis x (or else y), when
- its index is the same in every thread of a block row (column): built from literals, scalar
  arguments, blockIdx/blockDim/gridDim, the other axes' threadIdx and shapes, never from this
  axis's threadIdx or cuda.grid coordinate, laneid or a load (barriers.thread_dependent_values
  along that axis only);
- every thread of the block reaches it the same number of times, in the same order: it sits in
  block-uniform control flow (no condition or loop trip count that depends on the thread, no early
  return before it), as a barrier would have to. The shuffles then meet their partners in every
  lane, on a GPU and on the simulator (whose shuffles are block-wide);
- its array's adjoint is not thread-owned (that one is a plain `+=` already).
A device function's reads never qualify: its call sites may be divergent.
"""
from __future__ import annotations

from harness.engine.analyses.barriers import thread_dependent_values
from harness.engine.ir.ssa import Assign, If, KernelIR, Lit, Load, Loop

# launch indices that differ between the threads of one block row (same threadIdx.y and .z), and
# of one block column (same threadIdx.x and .z)
AXIS_VARYING_SPECIALS = {"x": ("tid.x", "grid.0", "laneid"), "y": ("tid.y", "grid.1", "laneid")}


def lane_group_reads(ir: KernelIR, owned, device: bool = False) -> dict[int, str]:
    """id of each load statement whose adjoint may be summed over lane groups first -> the axis
    ('x' or 'y') along which its index is the same (x where both are)."""
    if device:
        return {}
    block_varying = thread_dependent_values(ir)
    axis_varying = {axis: thread_dependent_values(ir, specials=specials)
                    for axis, specials in AXIS_VARYING_SPECIALS.items()}
    found: dict[int, str] = {}

    def uniform(a, varying) -> bool:
        return isinstance(a, Lit) or a not in varying

    def visit(stmts):
        for s in stmts:
            if isinstance(s, Assign) and isinstance(s.expr, Load) and s.expr.array not in owned:
                axis = next((axis for axis, varying in axis_varying.items()
                             if all(uniform(a, varying) for a in s.expr.index)), None)
                if axis is not None:
                    found[id(s)] = axis
            elif isinstance(s, If):
                if uniform(s.cond, block_varying):
                    visit(s.body)
                    visit(s.orelse)
            elif isinstance(s, Loop):
                bounds = (s.start, s.stop) if s.kind == "for" else (s.cond,)
                if all(uniform(a, block_varying) for a in bounds):
                    visit(s.header)
                    visit(s.body)

    visit(ir.body)
    return found
