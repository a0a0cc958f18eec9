"""Adjoints that the lanes of a block row (or column) add into one address, summed through the warp first.

For a read whose index is the same in every thread of a block row (analyses/lane_groups.py), the
reverse sweep would have all the row's lanes add into one shadow element at once: on a GPU each
such atomic is serialised over the lanes of the warp that share the address (16- or 32-fold in a
tiled matrix product or an n-body tile loop). Instead the contributions of a straight run of such
reads are queued in registers and, at the end of the run (before any control statement, barrier
or other adjoint that is not arithmetic or a read's accumulation, and at the end of the block),
each lane group sums them with shuffles and one lane per group adds each sum:

- a row group is the lanes of one warp that share threadIdx.y and .z: blockDim.x lanes when
  blockDim.x is a power of two up to 32, 32 lanes when it is a multiple of 32. A column group (a
  read whose index is the same along y) is the lanes of one warp that share threadIdx.x and .z,
  when blockDim.x is a power of two below 32 and the warp's rows are whole powers of two of one
  z-slice. Other blocks (group size 0) keep one atomic per lane. The choice is block-uniform, so
  the simulator's block-wide shuffles stay matched;
- S queued values (padded to W, a power of two) take a reduce-scatter over the group: at the
  group's first log2(W) lane offsets, largest first, a lane keeps half of its values and sends
  the other half to its partner, so each lane ends with one sum, of value p (its position in
  the group mod W); the group's remaining offsets then add the partners' sums. W - 1 + log2(group / W)
  shuffles for S values, against S atomics on contended addresses. A group narrower than W keeps
  one atomic per lane, so values are reduced in batches of at most 32 along x and of 2 along y
  (a warp of a 16-wide block holds two rows: a column group is often two lanes). Along y up to
  16 values wait, and batches of one width are reduced side by side under one test of the group
  size (and one of each further offset, and of the adding lanes): the tests, block-uniform
  branches, run once for all, and the batches' shuffles interleave (a 16 x 16 matrix product's
  eight column batches per tile: 48 branches -> 6);
- the first S lanes of each group add their sums: one atomic per value per group, on addresses no
  other lane of the warp shares. Lane p's index is value p's; where the values' indices are
  integer constants in arithmetic progression (an unrolled loop's counter: `sa[ty, j]` for j = 15,
  14, ..., 0) it is computed as `c + d * p`, with no select of one index per lane (which NVVM
  makes a search of divergent branches).
The sums are added in another order than the lanes' atomics would be: float results change in
rounding only. Shuffles name the lanes the warp has, as emit_reduce.py's do.
"""
from __future__ import annotations

from harness.engine.emission import emit_parallel
from harness.engine.emission.emit_state import EmitState
from harness.engine.emission.syntax import index_text
from harness.engine.ir.ssa import Assign, Lit, Loop, Prim, walk

OFFSETS = (1, 2, 4, 8, 16)
# per axis: the group size register, the lane's position in its group, a lane offset's text, the
# most values reduced together (a batch), and the most values held before the batches are reduced
AXES = {
    "x": ("_wg", "_wpx", "{}", 32, 32),
    "y": ("_yg", "_wpy", "_wbx * {}", 2, 16),
}


def setup(em: EmitState, axes: set[str]):
    """The lane group sizes, the warp's lanes and this lane's number (emitted once, block-uniform)."""
    em.line("# lane groups sum adjoints their lanes all add into one address (emit_lane_sums.py)")
    em.line("_wbx = cuda.blockDim.x")
    em.line("_wby = cuda.blockDim.y")
    em.line("_wt = cuda.threadIdx.x + _wbx * (cuda.threadIdx.y + _wby * cuda.threadIdx.z)")
    em.line("_wm = uint32((1 << min(32, _wbx * _wby * cuda.blockDim.z - _wt // 32 * 32)) - 1)")
    em.line("_wl = _wt % 32")
    if "x" in axes:
        em.line("_wg = _wbx if _wbx <= 32 and (_wbx & (_wbx - 1)) == 0 else (32 if _wbx % 32 == 0 else 0)")
        em.line("_wpx = _wl & (_wg - 1)       # the lane's position in its row group")
    if "y" in axes:
        em.line("_yg = 0")
        em.line("if _wbx < 32 and (_wbx & (_wbx - 1)) == 0:")
        em.line("    if (_wby & (_wby - 1)) == 0:")
        em.line("        _yg = min(32 // _wbx, _wby)")
        em.line("    elif _wbx * _wby % 32 == 0:")
        em.line("        _yg = 32 // _wbx")
        em.line("_wpy = (_wl // _wbx) & (_yg - 1) if _yg else 0   # its position in its column group")


def queue(em: EmitState, array: str, lane: int, index, value: str, axis: str):
    """Hold `value` for shadow[index] until the run of lane-group reads ends (flush)."""
    reg = f"_ws{em.lane_sum_count}"
    em.lane_sum_count += 1
    em.line(f"{reg} = {value}")
    em.lane_sum_queue.append((em.d(array, lane), tuple(index), reg, em.ftype(array), axis))
    key = (axis, em.ftype(array))
    if sum(1 for q in em.lane_sum_queue if (q[4], q[3]) == key) == AXES[axis][4]:
        flush(em, key)                    # full batches: their registers need not stay live longer


def flush(em: EmitState, only: tuple | None = None):
    """Add the queued values (those of batch key `only`: (axis, type), or all) to their shadow
    elements, summed over each lane group first."""
    queued = [q for q in em.lane_sum_queue if only is None or (q[4], q[3]) == only]
    em.lane_sum_queue = [q for q in em.lane_sum_queue if q not in queued]
    batches: dict[tuple, list] = {}
    for q in queued:
        batches.setdefault((q[4], q[3]), []).append(q)
    for (axis, ftype), items in batches.items():
        most = AXES[axis][3]
        chunks = [items[first:first + most] for first in range(0, len(items), most)]
        for width in sorted({_width(len(c)) for c in chunks}, reverse=True):
            _reduce(em, [c for c in chunks if _width(len(c)) == width], ftype, axis)


def _width(n: int) -> int:
    """The batch's width: its number of values padded to a power of two."""
    width = 1
    while width < n:
        width *= 2
    return width


def _reduce(em: EmitState, batches: list[list], ftype: str, axis: str):
    """Batches of one width, reduced side by side under one test of the group size: their
    shuffles interleave, and the block-uniform tests run once for all of them."""
    group, position_text, offset, _, _ = AXES[axis]
    width = _width(len(batches[0]))
    em.line(f"if {group} >= {width}:")
    em.depth += 1
    helds = [[q[2] for q in items] + [f"{ftype}(0.0)"] * (width - len(items)) for items in batches]
    bits = width.bit_length() - 1
    scatter = iter(reversed(OFFSETS[:bits]))
    while len(helds[0]) > 1:              # reduce-scatter: keep half, send half
        off = offset.format(next(scatter))
        half = len(helds[0]) // 2
        em.line(f"_wh = (_wl & ({off})) != 0")
        for held in helds:
            for lo, hi in zip(held[:half], held[half:]):
                em.line(f"_wo = cuda.shfl_xor_sync(_wm, {lo} if _wh else {hi}, {off})")
                em.line(f"{lo} = ({hi} if _wh else {lo}) + _wo")
        helds = [held[:half] for held in helds]
    totals = [held[0] for held in helds]
    for k in OFFSETS[bits:]:              # the group's other lanes hold the same values' sums
        em.line(f"if {group} > {k}:")
        for total in totals:
            em.line(f"    {total} += cuda.shfl_xor_sync(_wm, {total}, {offset.format(k)})")
    # lane p of its group holds the sum of value p (mod W) over the group; the lanes that add,
    # per array, under one test for every batch that has the same lanes add
    adds: dict[str, list[str]] = {}
    for items, total in zip(batches, totals):
        arrays: dict[str, list[int]] = {}
        for k, q in enumerate(items):
            arrays.setdefault(q[0], []).append(k)
        for shadow, ks in arrays.items():
            test = f"if {position_text} < {len(ks)}:" if ks == list(range(len(ks))) else \
                "if " + " or ".join(f"{position_text} == {k}" for k in ks) + ":"
            index = [_select(em, [items[k][1][d] for k in ks], ks, position_text)
                     for d in range(len(items[ks[0]][1]))]
            adds.setdefault(test, []).append(
                f"    cuda.atomic.add({shadow}, {emit_parallel.atomic_index(em, index)}, {total})")
    for test, lines in adds.items():
        em.line(test)
        for text in lines:
            em.line(text)
    em.depth -= 1
    em.line("else:")
    for items in batches:
        for shadow, index, reg, _, _ in items:
            em.line(f"    cuda.atomic.add({shadow}, {emit_parallel.atomic_index(em, index)}, {reg})")


def _select(em: EmitState, atoms: list, positions: list[int], position_text: str):
    """One index component: the atom of the value the lane at `position_text` holds. Integer
    constants in arithmetic progression over the positions (an unrolled loop's counter) are
    `c + d * position`: lanes of one warp at different positions take no divergent branches."""
    texts = [index_text([a]) for a in atoms]
    if len(set(texts)) == 1:
        return atoms[0]
    values = [_constant(em, a) for a in atoms]
    if None not in values:
        step, rest = divmod(values[1] - values[0], positions[1] - positions[0])
        start = values[0] - step * positions[0]
        if not rest and all(v == start + step * p for v, p in zip(values, positions)):
            return f"({start} + {step} * {position_text})"
    chain = texts[-1]
    for text, p in zip(reversed(texts[:-1]), reversed(positions[:-1])):
        chain = f"{text} if {position_text} == {p} else ({chain})"
    return f"({chain})"          # source text: index_text passes a string through


def _constant(em: EmitState, atom) -> int | None:
    """The integer an index atom always holds: a literal, or a name assigned (a copy of) one
    literal (an unrolled loop's counter)."""
    if isinstance(atom, Lit):
        return _int_literal(atom)
    if em.int_constants is None:
        # a loop's carried register is assigned its entry value only; a name assigned twice is
        # no constant either
        carried = {reg for s in walk(em.ir.body) if isinstance(s, Loop) for reg, _ in s.carried}
        assigns = [s for s in walk(em.ir.body) if isinstance(s, Assign)]
        targets = [s.target for s in assigns]
        em.int_constants = {}
        for s in assigns:
            e = s.expr
            if isinstance(e, Prim) and e.op == "copy" and len(e.args) == 1:
                e = e.args[0]
            if isinstance(e, Lit) and _int_literal(e) is not None and s.target not in carried \
                    and targets.count(s.target) == 1:
                em.int_constants[s.target] = e.value
    return em.int_constants.get(atom)


def _int_literal(lit: Lit) -> int | None:
    return lit.value if isinstance(lit.value, int) and not isinstance(lit.value, bool) else None
