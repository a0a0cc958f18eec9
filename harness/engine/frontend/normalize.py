"""Lower a kernel's Python AST into the engine's SSA form (see ir.py).

Steps, in order, each small:
  1. `control.py`: early `return` becomes a `_live` flag that guards the rest of the body, so
     every thread reaches the end of the kernel (the reverse sweep and Active reductions need it);
     `break`/`continue` become per-loop flags.
  2. SSA lowering, functions over one explicit `LoweringState` (lower_state.py), dispatched by
     AST node type through one table (lower_dispatch.py) that these modules fill: statements
     (lower_stmts.py), expressions (lower_exprs.py), loops (lower_loops.py), calls and CUDA
     intrinsics (lower_calls.py), device functions and device-side autodiff (lower_inline.py);
     names resolved in lower_resolve.py, branches joined in lower_branches.py.
     Expressions become three-address statements; scalar locals are renamed to SSA names;
     `and`/`or`/conditional expressions become `If` statements; `If` joins get explicit phi moves;
     types are inferred.
Anything outside the supported subset raises UnsupportedError naming the file and line.
"""
from __future__ import annotations

# importing the lowering modules registers their handlers in the dispatch table
from harness.engine.frontend import lower_calls, lower_exprs, lower_inline, lower_loops, lower_stmts  # noqa: F401
from harness.engine.analyses.barriers import check_barriers
from harness.engine.frontend.control import LIVE, RET, prepare_body  # noqa: F401  (LIVE: the flag's name, for tests and tools)
from harness.engine.frontend.source import KernelSource
from harness.engine.ir.ssa import Assign, Atomic, Draw, If, KernelIR, Loop, Param, walk
from harness.engine.analyses.activity import live_names, referenced_names
from harness.engine.frontend.lower_dispatch import block
from harness.engine.frontend.lower_state import LoweringState


def lower_kernel(src: KernelSource, params: list[Param], device: bool = False) -> KernelIR:
    """Lower a kernel (or, with device=True, a device function whose returns become ir.returns)."""
    st = LoweringState.start(src, params)
    body = block(st, prepare_body(src, values=device))
    returns = []
    k = 0
    while f"{RET}{k}" in st.env:
        returns.append(st.env[f"{RET}{k}"])
        k += 1
    ir = KernelIR(src.name, src.file, params, body, st.types, returns=returns,
                  calls=st.calls, nested=st.nested, nodiff=st.nodiff, local_arrays=st.local_arrays)
    check_barriers(ir, device)          # only in block-uniform control flow
    drop_unread_loop_variable_phis(ir)
    drop_unread_atomic_results(ir)
    return ir


def drop_unread_atomic_results(ir: KernelIR) -> None:
    """A helper written `return cuda.atomic.max(ary, i, v)` whose caller drops the value leaves the
    atomic's old value read by copies that nothing reads. The old value depends on the order in
    which threads arrive, and the analyses refuse a derivative through a read of it; these reads
    are not reads, so the dead copies (and If phis) that carry it are dropped."""
    live = live_names(ir.body) | {r for r in ir.returns if isinstance(r, str)}
    dropped: set[str] = set()

    def prune(stmts: list) -> list:
        kept = []
        for s in stmts:
            if isinstance(s, Atomic) and not isinstance(s, Draw) and s.target and s.target not in live:
                dropped.add(s.target)        # still assigned, never read
            elif isinstance(s, Assign) and s.target not in live and referenced_names(s.expr) & dropped:
                dropped.add(s.target)
                continue
            elif isinstance(s, If):
                s.body, s.orelse = prune(s.body), prune(s.orelse)
                dead = [phi for phi in s.phis if phi[0] not in live and set(phi[1:]) & dropped]
                dropped.update(phi[0] for phi in dead)
                s.phis = [phi for phi in s.phis if phi not in dead]
            elif isinstance(s, Loop):
                s.header, s.body = prune(s.header), prune(s.body)
            kept.append(s)
        return kept
    ir.body = prune(ir.body)


def drop_unread_loop_variable_phis(ir: KernelIR) -> None:
    """A branch whose loop binds a value only inside its body (the loop variable, or what the body
    assigns) gives the `if` a phi of it, which nothing may read afterwards (the rest of a block
    lowered once per branch: lower_stmts.py). Python 3.12's bytecode makes numba refuse such a phi
    ('Variable i is not defined': the loop may run no iteration), so such a phi that nothing reads
    is dropped."""
    loop_variables = {s.var for s in walk(ir.body) if isinstance(s, Loop) and s.kind == "for" and s.var}
    loop_variables |= {t.target for s in walk(ir.body) if isinstance(s, Loop)        # a range loop lowered
                       for t in walk(list(s.header) + list(s.body)) if isinstance(t, Assign)}   # as a while
    read = {r for r in ir.returns if isinstance(r, str)}
    for s in walk(ir.body):             # what each statement itself reads, not its nested blocks
        if isinstance(s, If):
            read |= referenced_names([s.cond] + [src for phi in s.phis for src in phi[1:]])
        elif isinstance(s, Loop):
            read |= referenced_names([s.start, s.stop, s.cond] + [v for _, v in s.carried])
        else:
            read |= referenced_names(s)
    for s in walk(ir.body):
        if isinstance(s, If) and s.phis:
            s.phis = [phi for phi in s.phis
                      if phi[0] in read or not any(src in loop_variables for src in phi[1:] if isinstance(src, str))]
