"""Barriers in block-uniform control flow (harness/engine/barriers.py): accepted where every
thread of a block reaches them, refused naming the line and the construct elsewhere."""
from __future__ import annotations

import pytest
from numba import cuda

from harness.core.errors import UnsupportedError
from harness.engine.frontend import parse_kernel
from harness.engine.ir import Barrier, Param, walk
from harness.engine.normalize import lower_kernel

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
        k += 1


def register_turns_thread_dependent(out, x, n):
    s = 1
    k = 0
    while k < n:
        cuda.syncthreads()          # k's trip count depends on s after the first iteration
        k += s
        s = cuda.threadIdx.x + 1


def loaded_condition(out, x, n):
    if x[0] > 0.0:
        cuda.syncthreads()


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
