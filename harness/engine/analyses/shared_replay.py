"""Shared tiles that the reverse sweep recomputes instead of taping.

A block-uniform loop with barriers that stages a tile in shared memory (the tiled matrix product,
the n-body tile loop) reads each element of the tile many times per thread. Taping those reads
costs a local-memory write and read per read per thread per iteration; re-running the iteration's
tile stores and its barrier costs one store per thread. The reverse sweep of such a loop replays
iteration r's stores to the tile before it replays the reads, so the reads see iteration r's tile.

That is sound when replaying iteration r's stores rebuilds exactly the state iteration r's reads
saw in the forward sweep, whatever the array held before. A shared array qualifies for a loop when
- the loop body has a barrier, the array's stores all come before the first top-level barrier and
  its loads all after it (nothing is read before the iteration has written it), and the loop's
  header never touches it;
- the iteration writes the same elements every time: at least one store at the top level of the
  body (not under a condition), whose index is the same in every iteration (built from thread and
  launch indices, literals and values from before the loop, never from the loop's counter, its
  registers or a load), and every other store to the array (under a condition, say) writes one of
  those elements; so an element the iteration reads holds the value this iteration stored, or a
  value nothing ever changes;
- nothing else in the kernel writes the array: no store outside the loop, no atomic anywhere,
  no store in a loop nested in the body.
Values the stores write are replayed like every other value of the iteration (restored registers,
loads of arrays the kernel does not write, taped loads). Anything else keeps today's tape.
"""
from __future__ import annotations

from harness.engine.ir.ssa import Assign, Atomic, Barrier, If, KernelIR, Lit, Load, Loop, Nested, Prim, Store, walk

# Primitives whose value may differ between two evaluations on the same operands in one thread
# (another lane's register; per-thread random state advancing).
_UNSTABLE_OPS = ("shfl", "shfl_up", "shfl_down", "shfl_xor")


def replayed_shared(ir: KernelIR, loop: Loop) -> set[str]:
    """The shared arrays whose reads in `loop` the reverse sweep recomputes (module docstring)."""
    barrier_at = next((k for k, s in enumerate(loop.body) if isinstance(s, Barrier)), None)
    if barrier_at is None:
        return set()
    before, after = loop.body[:barrier_at], loop.body[barrier_at + 1:]
    inside = {id(s) for s in walk(list(loop.header) + list(loop.body))}
    variant = iteration_variant(loop)
    shared = [p.name for p in ir.local_arrays if p.kind == "shared"]
    return {name for name in shared
            if _qualifies(ir, loop, name, before, after, inside, variant)}


def _qualifies(ir, loop, name, before, after, inside, variant) -> bool:
    if not any(_loads(s, name) for s in walk(after)):
        return False                                  # nothing to tape, nothing to recompute
    for s in walk(ir.body):
        if isinstance(s, Atomic) and s.array == name:
            return False
        if isinstance(s, Store) and s.array == name and id(s) not in inside:
            return False
    if any(_loads(s, name) or _stores(s, name) for s in walk(loop.header)):
        return False
    if any(_stores(s, name) for s in walk(after)) or any(_loads(s, name) for s in walk(before)):
        return False
    for s in before:
        if isinstance(s, Loop) and any(_stores(t, name) for t in walk([s])):
            return False
        if isinstance(s, If) and any(isinstance(t, Loop) and any(_stores(u, name) for u in walk([t]))
                                     for t in walk([s])):
            return False
    whole = [s.index for s in before if _stores(s, name)]
    if not whole or any(_atom_variant(a, variant) for index in whole for a in index):
        return False
    return all(s.index in whole for s in walk(before) if _stores(s, name))


def _loads(s, name: str) -> bool:
    return isinstance(s, Assign) and isinstance(s.expr, Load) and s.expr.array == name


def _stores(s, name: str) -> bool:
    return isinstance(s, Store) and s.array == name


def _atom_variant(a, variant: set[str]) -> bool:
    return not isinstance(a, Lit) and a in variant


def iteration_variant(loop: Loop) -> set[str]:
    """The values defined in `loop` that may differ from one iteration to the next in one thread:
    its counter and registers, loads, atomics' old values, phis, nested loops' registers, and
    anything computed from these. Thread and launch indices are the same in every iteration."""
    stmts = list(walk(list(loop.header) + list(loop.body)))
    variant = {reg for reg, _ in loop.carried}
    if loop.var:
        variant.add(loop.var)
    while True:
        before = len(variant)
        for s in stmts:
            if isinstance(s, Assign):
                e = s.expr
                if isinstance(e, Load) or (isinstance(e, Prim) and (
                        e.op in _UNSTABLE_OPS or "random" in e.op or "xoroshiro" in e.op
                        or any(_atom_variant(a, variant) for a in e.args))):
                    variant.add(s.target)
            elif isinstance(s, Atomic) and s.target:
                variant.add(s.target)
            elif isinstance(s, If):
                variant.update(target for target, _, _ in s.phis)
            elif isinstance(s, Loop):
                variant.update(reg for reg, _ in s.carried)
                if s.var:
                    variant.add(s.var)
            elif isinstance(s, Nested):
                variant.update(s.targets)
        if len(variant) == before:
            return variant
