"""Emitting loops: the plain loop (forward kernels, primal replays), the forward sweep of a reverse
kernel, and the reverse loop that rebuilds each iteration's entry registers, replays the body
without its stores and runs the body's adjoint. Functions over the emit state (emit_state.py).

A register-only loop with few varied live-ins and results takes the Jacobian form instead
(emit_loop_jacobian.py): no tape, no replay, its adjoint is one small matrix product.
Otherwise the reverse sweep rebuilds iteration r's loop-carried registers in one of two ways:
- recomputed: a loop that only computes registers (`recomputes`) keeps a register copy of its
  entry state, and for r < recompute_limit replays iterations 0..r-1 from it. O(limit^2) register
  arithmetic and no memory traffic, where the tape costs a local-memory (DRAM) write and read of
  every register in every iteration;
- taped: otherwise, from the per-thread tape in local memory the forward sweep wrote (tape_size
  entries; a thread whose loop runs longer sets the overflow flag).
A recomputable loop that runs past recompute_limit iterations uses both: its first iterations are
recomputed, the later ones taped, so the replay cost stays bounded by the limit.
"""
from __future__ import annotations

from harness.engine.emission import emit_extrema, emit_loop_jacobian, emit_parallel, emit_primal, emit_reverse, replay_needs
from harness.engine.emission.emit_plain_loops import assigned_in, carry_moves, loop_head, register_only, registers, rerun_block
from harness.engine.analyses.barriers import thread_dependent_values
from harness.engine.emission.emit_state import EmitState
from harness.engine.ir.ssa import Alloc, Assign, Atomic, Barrier, If, Loop, Store, walk
from harness.engine.emission.syntax import atom
from harness.engine.ir.types import is_float


def tape_name(em: EmitState, name: str) -> str:
    return f"_tape_{name.lstrip('_')}"


def entry_name(em: EmitState, name: str) -> str:
    return f"_entry_{name.lstrip('_')}"


def recomputes(em: EmitState, s: Loop) -> bool:
    """Whether the reverse sweep rebuilds this loop's first iterations by replaying them from its
    entry registers (`register_only`, and recompute_limit above 0). Anything else is taped."""
    return em.options.recompute_limit > 0 and register_only(em, s)


def taped_registers(em: EmitState, s: Loop) -> list[str]:
    """The loop's registers that its reverse replay reads (replay_needs.py): only those go on the
    tape. A recomputed iteration rebuilds every register from the entry registers instead."""
    return [name for name in registers(s) if replay_needs.replays_name(em, name)]


def tapes_registers(em: EmitState, s: Loop) -> bool:
    """Whether some iteration's registers go on the tape (a recomputed loop whose limit covers the
    whole tape never writes it)."""
    return bool(taped_registers(em, s)) and not (recomputes(em, s) and em.options.recompute_limit >= em.options.tape_size)


def swept_loops(em: EmitState, stmts):
    """The loops whose forward sweep counts (and maybe tapes) iterations: not the Jacobian-form
    loops, nor the loops inside them (forward mode runs those as written)."""
    for s in stmts:
        if isinstance(s, Loop):
            if emit_loop_jacobian.chosen(em, s):
                continue
            yield s
            yield from swept_loops(em, list(s.header) + list(s.body))
        elif isinstance(s, If):
            yield from swept_loops(em, s.body)
            yield from swept_loops(em, s.orelse)


def taped_loads(em: EmitState, s: Loop) -> list[str]:
    """The loop's taped loads (and atomics' old values) that its reverse replay reads
    (replay_needs.py): the others are neither taped nor replayed."""
    return sorted(name for name in s.taped_loads if em.replay_needs is None or name in em.replay_needs)


BLOCK_TAPE_BYTES = 8192      # shared memory a reverse kernel may take for per-block tapes


def block_taped_registers(em: EmitState) -> set[str]:
    """Registers taped once per block, in shared memory, instead of once per thread in local
    memory: those that every thread of the block holds alike (barriers.thread_dependent_values)
    in a taped loop that is not nested in another loop and has a barrier at the top level of its
    body (the stride of a tree reduction, a tile counter). One thread writes each iteration's
    value before that iteration's barrier, which every thread passes before the reverse sweep
    reads it; a thread per block instead of a local-memory write and read per thread. Not in a
    block-coarsened kernel, whose sweeps run again for the next virtual block, and at most
    BLOCK_TAPE_BYTES of shared memory (a large tape_size keeps the rest in local memory)."""
    if em.sig.coarsen:
        return set()
    varying = thread_dependent_values(em.ir)
    found: list[str] = []

    def visit(stmts):
        for s in stmts:
            if isinstance(s, If):
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, Loop) and not emit_loop_jacobian.chosen(em, s) and not recomputes(em, s) \
                    and any(isinstance(b, Barrier) and not b.warp for b in s.body):
                found.extend(name for name in taped_registers(em, s) if name not in varying)
    visit(em.ir.body)
    fits = BLOCK_TAPE_BYTES // (8 * em.options.tape_size)      # entries of at most 8 bytes
    return set(found[:fits])


def log_name(name: str) -> str:
    return f"_log_{name.lstrip('_')}"


LOG_POSITION = "_lc"     # the value log's next entry (activity.mark_taped_loads: logged values)
LOG_OVERRUN = "_lover"   # this thread's values outran the log: its replays would read no values of its own


def log_position_tape(s: Loop) -> str:
    return f"_tape_lc{s.id}"


def tape_declarations(em: EmitState, stmts):
    loops = list(swept_loops(em, stmts))
    names = [name for s in loops
             for name in (taped_registers(em, s) if tapes_registers(em, s) else []) + taped_loads(em, s)]
    if names and em.block_tape:
        em.line("# tape: loop registers (and reads of written arrays) for each iteration, per thread; "
                "per block where every thread holds the same")
    elif names:
        em.line("# per-thread tape: loop registers (and reads of written arrays) for each iteration")
    for name in names:
        memory = "shared" if name in em.block_tape else "local"
        em.line(f"{tape_name(em, name)} = cuda.{memory}.array({em.options.tape_size}, {tape_dtype(em, name)})")
    if em.block_tape:
        em.line("_tape_writer = cuda.threadIdx.x + cuda.threadIdx.y + cuda.threadIdx.z == 0   # writes the block's tape")
    logged = sorted({name for s in loops for name in s.logged})
    if logged:
        em.line("# value log: values a replay cannot recompute in nested loops, in execution order")
    for name in logged:
        em.line(f"{log_name(name)} = cuda.local.array({em.options.tape_size}, {tape_dtype(em, name)})")
    for s in loops:
        for _, tape, _ in taped_counters(em, s):
            em.line(f"{tape} = cuda.local.array({em.options.tape_size}, int64)")


def count_tape(s: Loop) -> str:
    """Where a loop around atomic max/min keeps the thread's count of them at each iteration's
    start (emit_extrema.py: counted kernels)."""
    return f"_tape_xn{s.id}"


def taped_counters(em: EmitState, s: Loop) -> list[tuple[str, str, str]]:
    """(counter, its tape, the emitter that reads it back) for each per-thread counter that the
    loop's iterations advance in execution order and its reverse iterations restore from their
    start: the value log's position (logged values inside), the count of atomic max/min
    (counted kernels)."""
    out = []
    if s.logged:
        out.append((LOG_POSITION, log_position_tape(s), "log-position"))
    if emit_extrema.holds_extremum(em, s):
        out.append((emit_extrema.COUNT, count_tape(s), "extremum-count"))
    return out


def tape_dtype(em: EmitState, name: str) -> str:
    t = em.ir.types.get(name, "int64")
    return t if is_float(t) else "int64"


def loop_sweep(em: EmitState, s: Loop, stores: bool):
    """The loop run forward in a reverse kernel, recording each iteration on the tape (or, for a
    recomputed loop, its entry registers once and the iterations past the limit on the tape;
    for a Jacobian-form loop, the loop with its tangents)."""
    if emit_loop_jacobian.chosen(em, s):
        emit_loop_jacobian.forward_sweep(em, s)
        return
    n = f"_n{s.id}"
    if recomputes(em, s):
        for name in registers(s):
            em.line(f"{entry_name(em, name)} = {name}")
    em.line(f"{n} = 0")
    if s.log_root and stores:
        em.line(f"{LOG_POSITION} = 0")
        em.line(f"{LOG_OVERRUN} = False")
    loop_head(em, s)
    em.depth += 1
    for counter, tape, _ in taped_counters(em, s):    # where this iteration starts, for its reverse replay
        em.line(f"if {n} < {em.options.tape_size}:")
        em.line(f"    {tape}[{n}] = {counter}")
    if s.kind == "while":
        replay_block(em, s.header, None, stores, record=n, loop=s)
        em.line(f"if not {atom(s.cond)}:")
        em.line("    break")
    record_registers(em, s, n)
    replay_block(em, s.body, None, stores, record=n, loop=s)
    carry_moves(em, s, tangents=False)
    em.line(f"{n} += 1")
    em.depth -= 1


def record_registers(em: EmitState, s: Loop, n: str):
    """Iteration n's registers onto the tape, or the overflow flag past its end. The flag is the
    same for both forms: the reverse sweep walks min(n, tape_size) iterations either way."""
    overflow = f"{em.prefix}tape_overflow[0] = {s.line}"
    if not recomputes(em, s):
        em.line(f"if {n} < {em.options.tape_size}:")
        em.depth += 1
        for name in taped_registers(em, s):
            if name in em.block_tape:
                em.line("if _tape_writer:")
                em.line(f"    {tape_name(em, name)}[{n}] = {name}")
            else:
                em.line(f"{tape_name(em, name)}[{n}] = {name}")
        em.line("pass")
        em.depth -= 1
        em.line("else:")
        em.line(f"    {overflow}")
        return
    em.line(f"if {n} >= {em.options.tape_size}:")
    em.line(f"    {overflow}")
    if tapes_registers(em, s):
        em.line(f"elif {n} >= {em.options.recompute_limit}:       # earlier iterations are recomputed")
        for name in taped_registers(em, s):
            em.line(f"    {tape_name(em, name)}[{n}] = {name}")


def restore_registers(em: EmitState, s: Loop, index: str):
    """The registers iteration `index` started with: recomputed below the limit, else taped;
    none when the reverse replay reads none of them."""
    if not taped_registers(em, s):
        return
    taped = tapes_registers(em, s)
    if recomputes(em, s):
        if taped:
            em.line(f"if {index} < {em.options.recompute_limit}:       # recomputed from the entry registers")
            em.depth += 1
        rerun_iterations(em, s, index)
        if not taped:
            return
        em.depth -= 1
        em.line("else:")
        em.depth += 1
    for name in taped_registers(em, s):
        em.line(f"{name} = {tape_name(em, name)}[{index}]")
    if recomputes(em, s):
        em.depth -= 1


def rerun_iterations(em: EmitState, s: Loop, count: str):
    """Iterations 0..count-1 replayed from the loop's entry registers, exactly as the forward
    sweep ran them (the same statements on the same values: the same results)."""
    for name in registers(s):
        em.line(f"{name} = {entry_name(em, name)}")
    j = f"_j{s.id}"
    em.line(f"for {j} in range({count}):")
    em.depth += 1
    if s.kind == "for":
        em.line(f"{s.var} = {em.emitters['loop-index'](em, s, j)}")
    rerun_block(em, s.header)
    rerun_block(em, s.body)
    carry_moves(em, s, tangents=False)
    em.depth -= 1


def replay_block(em: EmitState, stmts, tape_index, stores: bool, record: str | None = None, loop: Loop | None = None):
    """Primal statements. With tape_index, taped loads come from the tape instead of memory;
    with record, taped loads are also written to it; stores only when `stores`, but for the
    stores to `loop`'s recomputed shared tiles (shared_replay.py), which every replay rebuilds."""
    reverse = tape_index is not None         # the reverse sweep's replay of one iteration
    taped = set(taped_loads(em, loop)) if loop is not None else set()
    for s in stmts:
        if reverse and isinstance(s, (Assign, Atomic)) and s.target and not replay_needs.replays(em, s):
            continue                         # no adjoint reads it, nor anything computed from it
        if isinstance(s, Loop):
            loop_sweep(em, s, stores)
        elif isinstance(s, (Assign, Atomic)) and tape_index is None and loop is not None \
                and s.target in loop.logged and s.target in loop.taped_loads:
            logged_value(em, s, stores, record, loop)
        elif isinstance(s, If):
            phis = [phi for phi in s.phis if not reverse or replay_needs.replays_name(em, phi[0])]
            emit_primal.emit_if(em, s, lambda: (replay_block(em, s.body, tape_index, stores, record, loop),
                                                emit_primal.primal_phis(em, phis, 1)),
                                lambda: (replay_block(em, s.orelse, tape_index, stores, record, loop),
                                         emit_primal.primal_phis(em, phis, 2)))
        elif emit_extrema.is_extremum(em, s):            # its name, counted where it runs
            emit_extrema.record_contribution(em, s)
            if stores:
                emit_primal.primal(em, s)
        elif isinstance(s, Atomic) and s.target in em.taped_loads and reverse:
            em.line(f"{s.target} = {tape_name(em, s.target)}[{tape_index}]")   # its old value
            skip_logged(em, s, loop)
        elif isinstance(s, (Store, Atomic)):
            if stores or (isinstance(s, Store) and loop is not None and s.array in loop.replayed_shared):
                emit_primal.primal(em, s)
            if stores and record and isinstance(s, Atomic) and s.target in taped:
                em.line(f"if {record} < {em.options.tape_size}:")
                em.line(f"    {tape_name(em, s.target)}[{record}] = {s.target}")
        elif isinstance(s, Alloc):
            emit_primal.primal(em, s)
            emit_parallel.shadow_alloc(em, s, zero=True)
        elif isinstance(s, Barrier) and reverse and not replay_needs.barrier_orders_replay(s, loop, stmts):
            continue                         # the replay writes no shared memory before it
        elif isinstance(s, Assign) and reverse and s.target in em.taped_loads:
            em.line(f"{s.target} = {tape_name(em, s.target)}[{tape_index}]")
            skip_logged(em, s, loop)
        else:
            emit_primal.primal(em, s)
            if record and isinstance(s, Assign) and s.target in taped:
                em.line(f"if {record} < {em.options.tape_size}:")
                em.line(f"    {tape_name(em, s.target)}[{record}] = {s.target}")


def logged_value(em: EmitState, s, stores: bool, record: str | None, loop: Loop):
    """A value no replay can recompute, inside a nested loop: the forward sweep computes it and
    appends it to the value log; a replay inside an enclosing loop's reverse sweep reads it back
    from the log, whose position that loop restored. Either way it also goes on its own loop's
    tape, for that loop's reverse sweep."""
    size = em.options.tape_size
    if stores:
        emit_primal.primal(em, s)
        em.line(f"if {LOG_POSITION} < {size}:")
        em.line(f"    {log_name(s.target)}[{LOG_POSITION}] = {s.target}")
        em.line("else:")
        em.line(f"    {em.prefix}tape_overflow[0] = {loop.line}")
        em.line(f"    {LOG_OVERRUN} = True")
    else:                          # past the log's end the launch is refused (the flag above)
        em.line(f"{s.target} = {log_name(s.target)}[min({LOG_POSITION}, {size - 1})]")
    em.line(f"{LOG_POSITION} += 1")
    if record:
        em.line(f"if {record} < {size}:")
        em.line(f"    {tape_name(em, s.target)}[{record}] = {s.target}")


def skip_logged(em: EmitState, s, loop: Loop | None):
    """A logged value read from its loop's tape still takes its place in the log, so that the
    nested loops replayed after it read their own entries."""
    if loop is not None and s.target in loop.logged:
        em.line(f"{LOG_POSITION} += 1")


def reverse_loop(em: EmitState, s: Loop):
    if emit_loop_jacobian.chosen(em, s):
        em.emitters["loop-jacobian"](em, s)
        return
    n, r = f"_n{s.id}", f"_r{s.id}"
    if s.replayed_shared:
        # the replay overwrites the shared tiles; other threads may still read the last one
        em.barrier(em.comment_line(s.line) + " (before the tiles are replayed)")
    trips = f"min({n}, {em.options.tape_size})"
    if s.logged and not any(isinstance(t, Barrier) for t in walk(list(s.header) + list(s.body))):
        # a thread whose values outran the log would replay with stale ones (indices among them:
        # a fault); its launch is refused anyway, so it replays nothing. A loop with barriers runs
        # every iteration in every thread of the block
        trips = f"(0 if {LOG_OVERRUN} else {trips})"
    em.line(f"for {r} in range({trips} - 1, -1, -1):" + em.comment_line(s.line))
    em.depth += 1
    tape = em.emitters["tape-index"](em, s)
    restore_registers(em, s, tape)
    for counter, _, restore in taped_counters(em, s):
        em.line(f"{counter} = {em.emitters[restore](em, s, tape)}")
    if s.kind == "for":
        em.line(f"{s.var} = {em.emitters['loop-index'](em, s, r)}")
    em.emitters["replay-iteration"](em, s, tape)
    carried = {reg for reg, _ in s.carried}
    local = sorted(v for v in em.varied if v in assigned_in(em, s) and v not in carried)
    for name in local:                     # body values are fresh every iteration
        for j in em.lanes():
            em.line(f"{em.d(name, j)} = {em.ftype(name)}(0.0)")
    pairs = [(reg, nxt) for reg, nxt in s.carried if reg in em.varied]
    for j in em.lanes():
        for k, (reg, _) in enumerate(pairs):
            em.line(f"_c{k} = {em.d(reg, j)}")
            em.line(f"{em.d(reg, j)} = {em.ftype(reg)}(0.0)")
        for k, (reg, nxt) in enumerate(pairs):
            if em.is_varied(nxt):
                em.line(f"{em.d(nxt, j)} += _c{k}")
    unmirrored = replay_needs.unmirrored_barrier(s)
    if unmirrored is not None:
        em.unmirrored.add(id(unmirrored))
    emit_reverse.reverse(em, s.body)
    emit_reverse.reverse(em, s.header)
    em.line("pass")
    em.depth -= 1
