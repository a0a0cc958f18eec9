"""Barriers in block-uniform control flow.

`cuda.syncthreads()` must be reached by every thread of a block, or by none: a barrier that some
threads of a block skip is undefined behaviour on a GPU. So a barrier may sit inside an `if` or a
loop only when the condition, or the loop's trip count, is the same for every thread of the
block. This module finds the SSA values that are *block-uniform* (equal in every thread of a
block) and refuses a barrier anywhere else, naming its line and the construct that makes it
thread-dependent.

Block-uniform: literals, the kernel's scalar arguments, blockIdx, blockDim, gridDim,
cuda.gridsize, array shapes and sizes, and anything computed from these alone (loop counters and
loop-carried registers included, when the loop itself is uniform). Thread-dependent: threadIdx,
cuda.grid, laneid, every array load (another thread may have written the element), an atomic's
old value, warp shuffles, a device-side autodiff result, and every value computed under a
thread-dependent condition or in a loop whose trip count is thread-dependent. An early `return`
becomes the `_live` flag (control.py) that guards the rest of the kernel, so a barrier after a
thread-dependent return is refused too.

A barrier that orders nothing is the exception: when no thread touches shared or global memory
after it (nothing later in the kernel, nor in a later iteration of a loop around it, loads, stores
or updates a shared or global array, shuffles, or calls device-side autodiff), no value any
thread computes depends on whether the threads met at it, so the derivative kernels leave it out
instead of refusing (a kernel that ends with `cuda.syncthreads()` under its bounds check). The
primal launch is numba's own compile of the kernel, barrier and all. A barrier under a
thread-dependent condition that is followed by any such access stays refused.

The analysis is the greatest fixed point: everything starts uniform and a value becomes
thread-dependent once one of its sources is; iterating until nothing changes settles loop-carried
registers (a register is uniform when its value on entry and at the end of every iteration are).
"""
from __future__ import annotations

from harness.core.errors import UnsupportedError
from harness.engine.ir.ssa import Assign, Atomic, Barrier, If, KernelIR, Lit, Load, Loop, Nested, Prim, Special, Store, file_of, walk

# Specials that differ between the threads of one block; every other Special (bid, bdim, gdim,
# gsize, shape, size) is the same for all of them.
THREAD_SPECIALS = ("tid.", "grid.", "laneid")
# Primitives whose result differs per thread even from uniform operands: a shuffle reads
# another lane's register; a random draw advances per-thread state.
THREAD_OPS = ("shfl", "shfl_up", "shfl_down", "shfl_xor")


def expr_varies(expr, varying: set[str], specials: tuple = THREAD_SPECIALS, read_only: frozenset = frozenset()) -> bool:
    """Whether an expression's value may differ between the threads compared, its operands'
    by `varying` (launch_branches.py asks it with blockIdx among the `specials`)."""
    if isinstance(expr, Special):
        return expr.name.startswith(specials)
    if isinstance(expr, Load):      # an array the kernel never writes holds one value per index
        return expr.array not in read_only or any(atom_varies(a, varying) for a in expr.index)
    if isinstance(expr, Prim):
        if expr.op in THREAD_OPS or "random" in expr.op or "xoroshiro" in expr.op:
            return True
        return any(atom_varies(a, varying) for a in expr.args)
    return True


def atom_varies(a, varying: set[str]) -> bool:
    return not isinstance(a, Lit) and a in varying


def thread_dependent_values(ir: KernelIR, device: bool = False, specials: tuple = THREAD_SPECIALS,
                            read_only: frozenset = frozenset()) -> set[str]:
    """The SSA values that may differ between the threads of one block. A device function's
    scalar parameters count as thread-dependent (its call sites are not known here). `specials`:
    the launch indices that differ between the threads compared (by default every thread index;
    fewer to ask which values differ only along some axes). `read_only`: arrays the kernel never
    writes, whose loads at indices every thread computes alike are alike too (by default every load
    counts as thread-dependent)."""
    varying: set[str] = {p.name for p in ir.params if p.kind == "scalar"} if device else set()
    while True:
        before = len(varying)
        _visit(ir.body, None, varying, specials=specials, read_only=read_only)
        if len(varying) == before:
            return varying


def loop_varies(s: Loop, varying: set[str]) -> bool:
    if s.kind == "for":
        return atom_varies(s.start, varying) or atom_varies(s.stop, varying)
    return atom_varies(s.cond, varying)


def _visit(stmts, why: str | None, varying: set[str], refuse=None, specials: tuple = THREAD_SPECIALS,
           read_only: frozenset = frozenset()):
    """One pass over `stmts`, growing `varying`. `why` is None in a block-uniform context, else
    the outermost construct that makes it thread-dependent; refuse(barrier, why) is called for a
    barrier in such a context."""
    for s in stmts:
        if isinstance(s, Assign):
            if why is not None or expr_varies(s.expr, varying, specials, read_only):
                varying.add(s.target)
        elif isinstance(s, Atomic):
            if s.target:
                varying.add(s.target)
        elif isinstance(s, Nested):
            varying.update(s.targets)
        elif isinstance(s, If):
            inner = why or (f"the condition at line {s.line} depends on the thread"
                            if atom_varies(s.cond, varying) else None)
            _visit(s.body, inner, varying, refuse, specials, read_only)
            _visit(s.orelse, inner, varying, refuse, specials, read_only)
            for target, then, other in s.phis:
                if inner is not None or atom_varies(then, varying) or atom_varies(other, varying):
                    varying.add(target)
        elif isinstance(s, Loop):
            trip = "its condition" if s.kind == "while" else "its range"
            inner = why or (f"the loop at line {s.line} runs a thread-dependent number of times ({trip} depends "
                            "on the thread)" if loop_varies(s, varying) else None)
            _visit(s.header, inner, varying, refuse, specials, read_only)
            _visit(s.body, inner, varying, refuse, specials, read_only)
            for reg, end in s.carried:
                if inner is not None or atom_varies(end, varying):
                    varying.add(reg)
            if s.var and inner is not None:
                varying.add(s.var)
        elif isinstance(s, Barrier) and why is not None and refuse is not None:
            refuse(s, why)


def check_barriers(ir: KernelIR, device: bool = False) -> None:
    """Refuse a barrier that not every thread of a block reaches, or drop it from `ir` when it orders
    nothing (see the module docstring)."""
    if not any(isinstance(s, Barrier) for s in walk(ir.body)):
        return
    varying = thread_dependent_values(ir, device)
    private = {p.name for p in ir.local_arrays if p.kind == "local"}
    idle: set[int] = set()
    _idle_barriers(ir.body, False, private, idle)
    dropped: set[int] = set()

    def refuse(barrier: Barrier, why: str):
        if id(barrier) in idle:
            dropped.add(id(barrier))
            return
        raise UnsupportedError(
            f"cuda.syncthreads() is reached by only some threads of a block: {why} (every thread of a block "
            "must reach the same barriers, or the kernel's behaviour on a GPU is undefined; an early return "
            "before the barrier counts as such a condition)", file=file_of(ir, barrier), line=barrier.line)

    _visit(ir.body, None, varying, refuse)
    if dropped:
        _drop(ir.body, dropped)


def _shares_memory(s, private: set[str]) -> bool:
    """Whether statement `s` itself (not its nested blocks) can see or change another thread's data."""
    if isinstance(s, Assign):
        if isinstance(s.expr, Load):
            return s.expr.array not in private
        return isinstance(s.expr, Prim) and s.expr.op in THREAD_OPS
    if isinstance(s, (Store, Atomic)):
        return s.array not in private
    return isinstance(s, Nested)


def _idle_barriers(stmts, after: bool, private: set[str], idle: set[int]) -> bool:
    """Walk `stmts` backwards; `after`: whether a memory access follows the block. Barriers with no
    access after them go into `idle` (by id). Returns whether an access follows the block's start."""
    for s in reversed(stmts):
        if isinstance(s, Barrier):
            if not after:
                idle.add(id(s))
        elif isinstance(s, If):
            then = _idle_barriers(s.body, after, private, idle)
            other = _idle_barriers(s.orelse, after, private, idle)
            after = after or then or other
        elif isinstance(s, Loop):              # a later iteration follows every statement of the loop
            inside = any(_shares_memory(t, private) for t in walk(s.header + s.body))
            _idle_barriers(s.header + s.body, after or inside, private, idle)
            after = after or inside
        else:
            after = after or _shares_memory(s, private)
    return after


def _drop(stmts: list, ids: set[int]) -> None:
    stmts[:] = [s for s in stmts if id(s) not in ids]
    for s in stmts:
        if isinstance(s, If):
            _drop(s.body, ids)
            _drop(s.orelse, ids)
        elif isinstance(s, Loop):
            _drop(s.header, ids)
            _drop(s.body, ids)
