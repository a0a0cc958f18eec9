"""Branches that never both run in one launch.

An `if` whose condition has one value in every thread of the launch, and every time the launch
evaluates it, takes the same branch everywhere: its two branches never both run in one launch, so
an access in one cannot race with an access in the other. STUMPY's ping-pong
(`if j % 2 == 0: out = even; inp = odd` / `else: out = odd; inp = even`, the rest of the block
lowered once per branch) writes `odd` in one copy and reads it in the other; one launch runs one
copy only.

Launch-invariant conditions: computed from literals, the kernel's scalar arguments, launch
dimensions (blockDim, gridDim, cuda.gridsize), array shapes and sizes, and loads at such indices of
arrays the kernel never writes, with nothing that changes between the iterations of a loop that
encloses the `if` (a loop's counter and registers change between iterations, so `if k % 2 == 0` in
a loop over k runs both branches in one launch; `if flag:` of a scalar argument does not). Everything else makes both branches reachable: threadIdx, blockIdx,
cuda.grid, laneid, loads of arrays the kernel writes, atomics' old values, random draws, shuffles,
a phi whose condition varies, and a loop's registers when some threads skip the loop or run it a
different number of times. A function differentiated on the device gets arguments that may differ
per thread, so none of its scalar parameters counts.
"""
from __future__ import annotations

from harness.engine.analyses.barriers import THREAD_SPECIALS, atom_varies, expr_varies, loop_varies
from harness.engine.ir.ssa import Assign, Atomic, If, KernelIR, Lit, Loop, Nested, Store, walk

# blockIdx differs between blocks, so it is not the same across the launch
LAUNCH_SPECIALS = THREAD_SPECIALS + ("bid.",)

# how many launch variants an analysis enumerates before it falls back to all accesses together
VARIANT_LIMIT = 64


def launch_paths(ir: KernelIR, every_if: bool = False) -> dict[int, tuple]:
    """For each statement (by id), the launch-invariant `if`s around it, each as (id of the if,
    0 for its body or 1 for its else branch), outermost first. `every_if`: count every `if` as
    launch-invariant (unsound; the mutation self-test's `launch-branches-any-condition`)."""
    device = ir.param_forms is not None
    written = {s.array for s in walk(ir.body) if isinstance(s, (Store, Atomic))}
    # a function differentiated on the device may write any array it is passed, and its shadow
    written |= {name for s in walk(ir.body) if isinstance(s, Nested) for a in s.args if a.is_array
                for name in (a.value, a.shadow) if isinstance(name, str)}
    read_only = frozenset() if device else frozenset(
        p.name for p in ir.params if p.kind == "array" and p.name not in written)
    varying = launch_varying_values(ir, device, read_only)
    paths: dict[int, tuple] = {}

    def visit(stmts, path, loop_assigned):
        for s in stmts:
            paths[id(s)] = path
            if isinstance(s, If):
                invariant = every_if or isinstance(s.cond, Lit) or (
                    s.cond not in varying and s.cond not in loop_assigned)
                visit(s.body, path + ((id(s), 0),) if invariant else path, loop_assigned)
                visit(s.orelse, path + ((id(s), 1),) if invariant else path, loop_assigned)
            elif isinstance(s, Loop):
                inner = loop_assigned | iteration_dependent(s, read_only)
                visit(s.header, path, inner)
                visit(s.body, path, inner)

    visit(ir.body, (), frozenset())
    return paths


def launch_varying_values(ir: KernelIR, device: bool, read_only: frozenset) -> set[str]:
    """The SSA values that may differ between two threads of a launch, by data alone: a value
    computed from launch-invariant operands is the same in every thread that computes it, under
    whatever condition (which threads compute it does not matter to a condition's branch). Joins
    do matter: a phi varies with its condition, and a loop's counter and registers vary when the
    loop sits under a varying condition or runs a varying number of times (a thread that skips
    the loop keeps the register's value from before it). `device`: every scalar parameter varies."""
    varying: set[str] = {p.name for p in ir.params if p.kind == "scalar"} if device else set()

    def visit(stmts, guarded: bool):
        for s in stmts:
            if isinstance(s, Assign):
                if expr_varies(s.expr, varying, LAUNCH_SPECIALS, read_only):
                    varying.add(s.target)
            elif isinstance(s, Atomic) and s.target:
                varying.add(s.target)
            elif isinstance(s, Nested):
                varying.update(s.targets)
            elif isinstance(s, If):
                inner = guarded or atom_varies(s.cond, varying)
                visit(s.body, inner)
                visit(s.orelse, inner)
                for target, then, other in s.phis:
                    if atom_varies(s.cond, varying) or atom_varies(then, varying) or atom_varies(other, varying):
                        varying.add(target)
            elif isinstance(s, Loop):
                inner = guarded or loop_varies(s, varying)
                visit(s.header, inner)
                visit(s.body, inner)
                varying.update(reg for reg, end in s.carried if inner or atom_varies(end, varying))
                if s.var and inner:
                    varying.add(s.var)

    while True:
        before = len(varying)
        visit(ir.body, False)
        if len(varying) == before:
            return varying


def assigned_in(loop: Loop) -> frozenset:
    """Every name a loop (re)assigns while it runs: its counter and registers, and every value
    computed in its header or body, nested loops' included."""
    names = {loop.var} | {reg for reg, _ in loop.carried}
    for s in walk(list(loop.header) + list(loop.body)):
        if isinstance(s, Assign) or (isinstance(s, Atomic) and s.target):
            names.add(s.target)
        elif isinstance(s, Nested):
            names.update(s.targets)
        elif isinstance(s, If):
            names.update(target for target, _, _ in s.phis)
        elif isinstance(s, Loop):
            names.add(s.var)
            names.update(reg for reg, _ in s.carried)
    return frozenset(n for n in names if n is not None)


def iteration_dependent(loop: Loop, read_only: frozenset) -> frozenset:
    """The values a loop may give different values in different iterations: its counter and
    registers (nested loops' too), and whatever is computed from them, from loads of arrays the
    kernel writes (or at indices that change), atomics' old values and random draws. A value the
    body computes from launch-invariant operands alone (`if rmatvec:` inside PyLops' filter loops,
    a scalar argument cast to bool each iteration) is the same every time, as it is in every
    thread."""
    names = assigned_in(loop)
    seeds = {loop.var} | {reg for reg, _ in loop.carried}
    for s in walk(list(loop.header) + list(loop.body)):
        if isinstance(s, Loop):
            seeds.add(s.var)
            seeds.update(reg for reg, _ in s.carried)
    dep = {n for n in seeds if n is not None}
    while True:
        before = len(dep)
        for s in walk(list(loop.header) + list(loop.body)):
            if isinstance(s, Assign) and expr_varies(s.expr, dep, (), read_only):
                dep.add(s.target)
            elif isinstance(s, Atomic) and s.target:
                dep.add(s.target)
            elif isinstance(s, Nested):
                dep.update(s.targets)
            elif isinstance(s, If):
                dep.update(t for t, then, other in s.phis
                           if atom_varies(s.cond, dep) or atom_varies(then, dep) or atom_varies(other, dep))
        if len(dep) == before:
            return frozenset(dep & names)


def may_meet(a: tuple, b: tuple) -> bool:
    """Whether statements with launch paths a and b can both run in one launch: not when one sits
    in the body and the other in the else branch of the same launch-invariant `if`."""
    sides = dict(a)
    return all(sides.get(branch, side) == side for branch, side in b)


def launch_variants(items: list, path_of, limit: int = VARIANT_LIMIT) -> list[list]:
    """`items` split into the groups that one launch can run together: one group per choice of
    branch at each launch-invariant `if` that has items on both sides (items outside it go into
    every group). More than `limit` groups: all items as one group, which every analysis here
    treats more strictly."""
    groups, done = [list(items)], []
    while groups:
        group = groups.pop()
        split = _a_split(group, path_of)
        if split is None:
            done.append(group)
        else:
            groups.extend([x for x in group if dict(path_of(x)).get(split, side) == side] for side in (0, 1))
        if len(done) + len(groups) > limit:
            return [list(items)]
    return done


def _a_split(group: list, path_of):
    """An `if` with items of `group` in both its branches, or None."""
    seen: dict[int, set] = {}
    for x in group:
        for branch, side in path_of(x):
            seen.setdefault(branch, set()).add(side)
            if len(seen[branch]) == 2:
                return branch
    return None
