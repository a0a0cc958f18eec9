"""Barriers in block-uniform control flow (harness/engine/analyses/barriers.py): accepted where every
thread of a block reaches them, refused naming the line and the construct elsewhere."""
from __future__ import annotations

import pytest
from numba import cuda

from harness.core.errors import UnsupportedError
from harness.engine.frontend.source import parse_kernel
from harness.engine.ir.ssa import Barrier, Param, walk
from harness.engine.frontend.normalize import lower_kernel

PARAMS = [Param("out", "array", "float64", 1), Param("x", "array", "float64", 1), Param("n", "scalar", "int64")]


def _lower(fn):
    return lower_kernel(parse_kernel(fn), PARAMS)


def uniform_while(out, x, n):
    s = 1
    while s < cuda.blockDim.x * n:
        out[cuda.threadIdx.x] += x[cuda.threadIdx.x]
        cuda.syncthreads()
        s *= 2


def uniform_if(out, x, n):
    if cuda.blockDim.x == 64 and n > 0:
        cuda.syncthreads()
    out[0] = x[0]


def loop_on_thread(out, x, n):
    k = 0
    while k < cuda.threadIdx.x:
        cuda.syncthreads()
        out[k] = x[k]
        k += 1


def register_turns_thread_dependent(out, x, n):
    s = 1
    k = 0
    while k < n:
        cuda.syncthreads()          # k's trip count depends on s after the first iteration
        k += s
        s = cuda.threadIdx.x + 1
    out[0] = x[1]


def loaded_condition(out, x, n):
    if x[0] > 0.0:
        cuda.syncthreads()
    out[0] = x[1]


def after_early_return(out, x, n):
    i = cuda.grid(1)
    if i >= n:
        return
    cuda.syncthreads()
    out[i] = x[i]


def test_block_uniform_barriers_are_lowered():
    for fn in (uniform_while, uniform_if):
        assert any(isinstance(s, Barrier) for s in walk(_lower(fn).body)), fn.__name__


@pytest.mark.parametrize("fn, why", [
    (loop_on_thread, "the loop at line \\d+ runs a thread-dependent number of times"),
    (register_turns_thread_dependent, "the loop at line \\d+ runs a thread-dependent number of times"),
    (loaded_condition, "the condition at line \\d+ depends on the thread"),
    (after_early_return, "the condition at line \\d+ depends on the thread"),
])
def test_thread_dependent_barrier_is_refused_naming_its_line(fn, why):
    with pytest.raises(UnsupportedError, match="test_barriers.py:\\d+: cuda.syncthreads\\(\\) is reached by only "
                       f"some threads of a block: {why}") as info:
        _lower(fn)
    import inspect
    lines, first = inspect.getsourcelines(fn)
    barrier = first + next(k for k, text in enumerate(lines) if "syncthreads" in text)
    assert info.value.line == barrier


def trailing_barrier(out, x, n):
    """A DTW fill's shape: per-thread work, then a barrier under the bounds check with nothing after."""
    i = cuda.grid(1)
    if i < n:
        for k in range(1, n):
            out[i] += x[i] * k
        cuda.syncthreads()


def idle_in_a_thread_loop(out, x, n):
    i = cuda.grid(1)
    out[i] = x[i]
    scratch = cuda.local.array(4, "float64")
    for k in range(i):
        cuda.syncthreads()
        scratch[k % 4] = 1.0          # a thread's own local array: no other thread sees it


def access_after_the_loop(out, x, n):
    i = cuda.grid(1)
    for k in range(i):
        cuda.syncthreads()
    out[i] = x[i]


def access_in_a_later_iteration(out, x, n):
    i = cuda.grid(1)
    for k in range(i):
        out[i] += x[k]
        cuda.syncthreads()


@pytest.mark.parametrize("fn", [trailing_barrier, idle_in_a_thread_loop])
def test_a_barrier_that_orders_no_memory_access_is_dropped_not_refused(fn):
    ir = _lower(fn)
    assert not any(isinstance(s, Barrier) for s in walk(ir.body))


@pytest.mark.parametrize("fn", [access_after_the_loop, access_in_a_later_iteration])
def test_a_barrier_with_memory_accesses_after_it_stays_refused(fn):
    with pytest.raises(UnsupportedError, match="runs a thread-dependent number of times"):
        _lower(fn)


def test_a_block_uniform_barrier_with_nothing_after_it_is_kept():
    def uniform_trailing(out, x, n):
        out[cuda.threadIdx.x] = x[cuda.threadIdx.x]
        cuda.syncthreads()
    assert any(isinstance(s, Barrier) for s in walk(_lower(uniform_trailing).body))


def grid_sync(out, x, n):
    out[0] = x[0]
    cuda.cg.this_grid().sync()


def grid_group(out, x, n):
    g = cuda.cg.this_grid()
    g.sync()


@pytest.mark.parametrize("fn", [grid_sync, grid_group])
def test_grid_wide_barrier_is_refused_naming_the_construct(fn):
    with pytest.raises(UnsupportedError, match="test_barriers.py:\\d+: a grid-wide barrier "
                       "\\(cuda.cg.this_grid\\(\\).sync\\(\\)\\) is not supported"):
        _lower(fn)
