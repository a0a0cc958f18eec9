"""Shared tiles the reverse sweep recomputes (harness/engine/analyses/shared_replay.py): a block-uniform loop
that writes the same elements of a shared array every iteration before a barrier and reads them only
after it replays those stores instead of taping each read; every other shape of loop keeps the tape
(a read in a nested loop also goes to the value log, emit_loops.py). The gradients of both forms are checked against finite
differences by cases/barrier-shared-replay.yaml and the barrier cases."""
from __future__ import annotations

import pytest
from numba import cuda, float64

from harness.engine.analyses.activity import mark_taped_loads
from harness.engine.frontend.source import parse_kernel
from harness.engine.ir.ssa import Loop, Param, walk
from harness.engine.frontend.normalize import lower_kernel

PARAMS = [Param("out", "array", "float64", 1), Param("x", "array", "float64", 1), Param("n", "scalar", "int64")]


def _marked(fn):
    ir = lower_kernel(parse_kernel(fn), PARAMS)
    mark_taped_loads(ir)
    return [s for s in walk(ir.body) if isinstance(s, Loop)]


def staged_tile(out, x, n):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for start in range(0, n, cuda.blockDim.x):
        tile[t] = 0.0
        if start + t < n:
            tile[t] = x[start + t]
        cuda.syncthreads()
        for k in range(cuda.blockDim.x):          # a dynamic loop nested in the tile loop
            acc += tile[k] * tile[k]
        cuda.syncthreads()
    out[cuda.grid(1)] = acc


def index_set_in_the_loop(out, x, n):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for r in range(n):
        k = t % 32                                  # computed in the loop, the same every iteration
        tile[k] = x[r * 32 + k]
        cuda.syncthreads()
        acc += tile[(k + 1) % 32]
        cuda.syncthreads()
    out[cuda.grid(1)] = acc


def store_only_under_condition(out, x, n):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for start in range(0, n, 32):
        if start + t < n:                         # the previous tile survives where this is false
            tile[t] = x[start + t]
        cuda.syncthreads()
        acc += tile[(t + 1) % 32]
        cuda.syncthreads()
    out[cuda.grid(1)] = acc


def index_moves_with_the_counter(out, x, n):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for r in range(n):
        tile[(t + r) % 32] = x[t]                 # a different element every iteration
        cuda.syncthreads()
        acc += tile[t]
        cuda.syncthreads()
    out[cuda.grid(1)] = acc


def read_before_the_barrier(out, x, n):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for r in range(n):
        acc += tile[t]                            # the previous iteration's tile
        tile[t] = x[t] * acc
        cuda.syncthreads()
        acc += tile[(t + 1) % 32]
        cuda.syncthreads()
    out[cuda.grid(1)] = acc


def written_after_the_loop(out, x, n):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for r in range(n):
        tile[t] = x[t] * r
        cuda.syncthreads()
        acc += tile[(t + 1) % 32]
        cuda.syncthreads()
    tile[t] = acc
    out[cuda.grid(1)] = tile[t]


def tree_reduction(out, x, n):
    sm = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    sm[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            sm[t] += sm[t + s]
        cuda.syncthreads()
        s //= 2
    out[cuda.blockIdx.x] = sm[0]


@pytest.mark.parametrize("fn", [staged_tile, index_set_in_the_loop])
def test_a_tile_staged_every_iteration_is_replayed_not_taped(fn):
    outer = _marked(fn)[0]
    assert outer.replayed_shared == {"tile"}
    assert not any(s.taped_loads for s in _marked(fn))


@pytest.mark.parametrize("fn", [store_only_under_condition, index_moves_with_the_counter, read_before_the_barrier,
                                written_after_the_loop, tree_reduction])
def test_a_tile_the_replay_could_not_rebuild_stays_on_the_tape(fn):
    loop = _marked(fn)[0]
    assert loop.replayed_shared == set()
    assert loop.taped_loads, "the loop's shared reads go on the tape"


def conditional_tile_read_in_a_nested_loop(out, x, n):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for start in range(0, n, 32):
        if start + t < n:
            tile[t] = x[start + t]
        cuda.syncthreads()
        for k in range(cuda.blockDim.x):
            acc += tile[k]
        cuda.syncthreads()
    out[cuda.grid(1)] = acc


def test_a_nested_read_of_a_tile_that_cannot_be_replayed_goes_to_the_value_log():
    outer, inner = _marked(conditional_tile_read_in_a_nested_loop)
    assert outer.replayed_shared == set()
    assert inner.taped_loads and inner.taped_loads <= inner.logged <= outer.logged
    assert outer.log_root and not inner.log_root
    assert not outer.taped_loads            # the read is the inner loop's: on its tape, and logged


# ------------------------------------------------------- the tile loop's last barrier in the reverse sweep

def tile_then_other_store(out, x, n):
    tile = cuda.shared.array(32, float64)
    other = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for start in range(0, n, 32):
        tile[t] = x[start + t]
        cuda.syncthreads()
        other[t] = tile[(t + 1) % 32]             # a store between the two barriers
        acc += other[t]
        cuda.syncthreads()
    out[cuda.grid(1)] = acc


def tile_without_final_barrier(out, x, n):
    tile = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    acc = 0.0
    for start in range(0, n, 32):
        cuda.syncthreads()
        tile[t] = x[start + t]
        cuda.syncthreads()
        acc += tile[(t + 1) % 32]
    out[cuda.grid(1)] = acc


def test_the_last_barrier_of_a_rebuilt_tile_loop_needs_no_mirror():
    """The replay's barrier after the tile stores orders what the mirror of the body's last barrier
    would (replay_needs.unmirrored_barrier); a store between the two barriers keeps the mirror, and
    so do loops that keep their tape (a barrier first in the body, a tile stored under a condition)."""
    from harness.engine.emission.replay_needs import unmirrored_barrier
    from harness.engine.ir.ssa import Barrier
    loop = _marked(staged_tile)[0]
    assert loop.replayed_shared and unmirrored_barrier(loop) is loop.body[-1]
    assert isinstance(loop.body[-1], Barrier)
    for fn in (tile_then_other_store, tile_without_final_barrier, store_only_under_condition):
        assert unmirrored_barrier(_marked(fn)[0]) is None, fn.__name__
