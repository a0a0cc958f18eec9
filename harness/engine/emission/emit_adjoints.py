"""The reverse sweep's adjoint emitters, one per statement kind, and the shared steps that are
emitters too. ADJOINT_EMITTERS is the default registry; an engine takes another through its Seams
(seams.py), which is how the mutation self-test plants a bug. Each emitter takes the emit state
(`em`, emit_state.py) and the statement."""
from __future__ import annotations

from harness.engine.emission import coarsen, emit_deferred_zeros, emit_extrema, emit_forward, emit_lane_sums, emit_loop_jacobian, emit_loops, emit_parallel, emit_prefetch, emit_primal, emit_reverse, emit_uniform
from harness.engine.analyses.activity import SHUFFLES
from harness.engine.emission.emit_state import EmitState
from harness.engine.ir.ssa import Assign, Atomic, Barrier, If, Load, Loop, Prim, Store, walk
from harness.engine.emission.syntax import atom, costly, index_text, partial_text

# The reverse sweep emits each statement's adjoint with the emitter registered for its kind
# (statement_kind); a few shared steps are emitters too. ADJOINT_EMITTERS is the default registry;
# an engine takes another through its Seams (harness/engine/seams.py), which is how the mutation
# self-test plants a bug.

def statement_kind(em: EmitState, s) -> str | None:
    """The adjoint emitter a statement of the reverse sweep needs (None: it has no adjoint)."""
    if isinstance(s, Loop):
        return "loop"
    if isinstance(s, Barrier):
        return "barrier"
    if emit_extrema.is_extremum(em, s):
        return "extremum"
    if isinstance(s, Atomic):
        return "atomic"
    if isinstance(s, Assign) and s.target in em.varied and s.expr.__class__ is Prim and s.expr.op in SHUFFLES:
        return "shuffle"
    if isinstance(s, If):
        return "if"
    if isinstance(s, Store) and s.array in em.diff_arrays:
        return "store"
    if isinstance(s, Assign) and s.target in em.varied:
        return "load" if isinstance(s.expr, Load) else "assign"
    return None


def adjoint_loop(em: EmitState, s: Loop):
    emit_loops.reverse_loop(em, s)


def adjoint_barrier(em: EmitState, s: Barrier):
    if id(s) in em.unmirrored:            # the replay's own barrier orders what it would
        return
    em.barrier(em.comment_line(s.line) + " (mirrored)")


def adjoint_extremum(em: EmitState, s):
    emit_extrema.extremum_adjoint(em, s)


def adjoint_atomic(em: EmitState, s: Atomic):
    """The adjoint of an accumulation is a gather."""
    if s.array in em.diff_arrays and em.is_varied(s.value):
        sign = "+" if s.op == "add" else "-"
        for j in em.lanes():
            em.line(f"{em.d(s.value, j)} {sign}= {em.d(s.array, j)}[{index_text(s.index)}]")


def adjoint_shuffle(em: EmitState, s: Assign, opposite: dict | None = None):
    for j in em.lanes():
        emit_parallel.reverse_shuffle(em, s, j, **({"opposite": opposite} if opposite is not None else {}))


def adjoint_if(em: EmitState, s: If):
    emit_primal.emit_if(em, s, lambda: (emit_reverse.reverse_phis(em, s.phis, 1), emit_reverse.reverse(em, s.body)),
                        lambda: (emit_reverse.reverse_phis(em, s.phis, 2), emit_reverse.reverse(em, s.orelse)))


def adjoint_store(em: EmitState, s: Store, consume: bool = True):
    for j in em.lanes():
        name, index = em.d(s.array, j), index_text(s.index)
        shadow = f"{name}[{index}]"
        early = em.prefetched.pop(name, None)
        if em.zero_pending:                # zeros this read of the shadow must see
            emit_deferred_zeros.release(em, name, s)
        if em.is_varied(s.value):
            em.line(f"{em.d(s.value, j)} += {early or shadow}")
        if consume and em.defer_zeros and early is None and _plain_updates(em, s.array):
            emit_deferred_zeros.defer(em, name, index, s)
        elif consume:
            em.line(f"{shadow} = 0")       # the overwritten element's cotangent is consumed


def _plain_updates(em: EmitState, array: str) -> bool:
    """Whether the array's shadow takes plain read-modify-writes: no other thread touches an element
    between two of this thread's accesses (it owns the element, or, in shared memory, between
    barriers)."""
    return array in em.sig.owned or array in em.sig.exclusive


def adjoint_load(em: EmitState, s: Assign):
    e = s.expr
    em.lane_site = em.lane_sums.get(id(s))
    em.read_site = s
    for j in em.lanes():
        emit_reverse.accumulate_array(em, e.array, j, e.index, em.d(s.target, j))
    em.lane_site = None
    em.read_site = None


def operand_partials(em: EmitState, s: Assign):
    """(k, source text of d target / d operand k) for each varied operand of a primitive."""
    e = s.expr
    return [(k, partial_text(e.op, k, e.args, s.target, em.ftype(s.target), e.partials, rules=em.rules))
            for k, a in enumerate(e.args) if em.is_varied(a)]


def hoist_partials(em: EmitState, s):
    """In the forward sweep, right after a primitive outside any dynamic loop: compute its costly
    partials (a math call, a division, a power) into registers the reverse sweep multiplies by.
    Written next to the primal they overlap with its latency, as in a hand-written adjoint, and
    NVVM shares work with the primal (`cos(x)` beside `sin(x)`: one range reduction for both);
    left in the reverse sweep they run after the whole primal, one dependent call after another
    (math_heavy's reverse: 1.35x its hand-written adjoint on an H200; docs/gpu.md). A loop body's
    forward and reverse run per iteration, so its partials stay where they are used."""
    if statement_kind(em, s) != "assign":
        return
    if em.in_loops is None:
        em.in_loops = {id(t) for loop in walk(em.ir.body) if isinstance(loop, Loop)
                       for t in walk(list(loop.header) + list(loop.body))}
    if id(s) in em.in_loops:
        return
    for k, p in operand_partials(em, s):
        if costly(p):
            reg = f"_pd{len(em.hoisted)}"
            em.line(f"{reg} = {p}")
            em.hoisted[(id(s), k)] = reg


def adjoint_assign(em: EmitState, s: Assign, update: str = "+="):
    """A primitive: each varied operand's adjoint gets dr times its partial (`update` is how),
    read from the register the forward sweep computed it into when it was hoisted there."""
    partials, args = operand_partials(em, s), s.expr.args
    for j in em.lanes():
        dt = em.d(s.target, j)
        for k, p in partials:
            p = em.hoisted.get((id(s), k), p)
            one = f"{em.ftype(s.target)}(1.0)"
            term = dt if p == one else (f"-{dt}" if p == f"-{one}" else f"{dt} * ({p})")
            em.line(f"{em.d(args[k], j)} {update} {term}")


def accumulate(em: EmitState, array: str, lane: int, index, value: str):
    """shadow[index] += value; atomic unless every access to `array` is this thread's own, or
    its own between two barriers (a shared array, ordering.interval_exclusive)."""
    shadow = em.d(array, lane)
    slot = emit_uniform.slot_register(em, array, index, lane)
    if em.zero_pending:                  # a store's zeroing waits: fold into it, or write it first
        if slot is None and _plain_updates(em, array) and shadow not in em.prefetched:
            if emit_deferred_zeros.fold(em, shadow, index_text(index), value, em.read_site):
                return
        else:
            emit_deferred_zeros.release(em, shadow, None)
    if slot is not None:
        em.line(f"{slot} += {value}")
    elif array in em.sig.owned:
        early = em.prefetched.pop(shadow, None)
        if early is not None:
            em.line(f"{shadow}[{index_text(index)}] = {early} + {value}")
        else:
            em.line(f"{shadow}[{index_text(index)}] += {value}")
    elif array in em.sig.exclusive:      # no other thread touches the element in this interval
        em.line(f"{shadow}[{index_text(index)}] += {value}")
    elif em.lane_site:
        emit_lane_sums.queue(em, array, lane, index, value, em.lane_site)
    else:
        em.line(f"cuda.atomic.add({shadow}, {emit_parallel.atomic_index(em, index)}, {value})")


def replay_iteration(em: EmitState, s: Loop, tape_index: str):
    """In a dynamic loop's reverse sweep: recompute one iteration's values from the tape."""
    emit_loops.replay_block(em, s.header, tape_index, stores=False, loop=s)
    emit_loops.replay_block(em, s.body, tape_index, stores=False, loop=s)


def tape_index(em: EmitState, s: Loop) -> str:
    """The iteration whose registers a dynamic loop's reverse sweep restores in its current
    iteration: the tape entry it reads, or how many iterations a recomputed loop replays."""
    return f"_r{s.id}"


def log_position(em: EmitState, s: Loop, iteration: str) -> str:
    """Where a loop's reverse iteration finds its logged values (emit_loops.logged_value): the
    log's position the forward sweep taped at that iteration's start."""
    return f"{emit_loops.log_position_tape(s)}[{iteration}]"


def extremum_count(em: EmitState, s: Loop, iteration: str) -> str:
    """How many max/min the thread had run when a loop's iteration started (emit_extrema.py:
    counted kernels), which names the executions its reverse replay meets."""
    return f"{emit_loops.count_tape(s)}[{iteration}]"


def loop_index(em: EmitState, s: Loop, iteration: str) -> str:
    """A counted loop's variable in iteration `iteration` (0-based), as the reverse sweep and a
    recomputed loop's replay rebuild it: start + iteration * step."""
    return f"{atom(s.start)} + {iteration} * {s.step}"


def block_sum(em: EmitState, target: str, index: str, value: str) -> str:
    """The statement adding one block's sum into an Active scalar's or a uniform read's slot."""
    return f"cuda.atomic.add({target}, {index}, {value})"



ADJOINT_EMITTERS = {
    # one per statement kind of the reverse sweep
    "loop": adjoint_loop, "barrier": adjoint_barrier, "extremum": adjoint_extremum, "atomic": adjoint_atomic,
    "shuffle": adjoint_shuffle, "if": adjoint_if, "store": adjoint_store, "load": adjoint_load,
    "assign": adjoint_assign,
    # shared steps
    "accumulate": accumulate, "replay-iteration": replay_iteration, "tape-index": tape_index,
    "log-position": log_position, "extremum-count": extremum_count,
    "block-sum": block_sum, "loop-jacobian": emit_loop_jacobian.adjoint, "loop-index": loop_index,
    "hoist-prefetch": emit_prefetch.hoist_prefetch, "virtual-index": coarsen.special_text, "tangent-atomic": emit_forward.tangent_atomic,
}
