"""A read of the element that the thread's own store then replaces, later in the same block, is no
cross-thread write-after-read (harness/engine/analyses/ownership.py, own_element_updates): another
thread could change that element only by racing with the thread's store. Any other read of an
array the kernel writes, at an index other threads may share, keeps the refusal."""
from __future__ import annotations

import pytest
from numba import cuda

from harness.core.errors import UnsupportedError
from harness.engine.analyses.ownership import LaunchShape, check_cross_thread_war, owned_arrays
from harness.engine.frontend.normalize import lower_kernel
from harness.engine.frontend.source import parse_kernel
from harness.engine.ir.ssa import Param

ONE_D = LaunchShape((0,), (0,))


def _lower(fn):
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    params = [Param(n, "array", "int32" if n == "idx" else "float64", 1) for n in names]
    return lower_kernel(parse_kernel(fn), params)


def add_at_gathered(a, idx, v):
    i = cuda.grid(1)
    a[idx[i]] += v[i]


def scale_at_gathered(a, idx, v):
    i = cuda.grid(1)
    k = idx[i]
    a[k] = a[k] * v[i]


def read_then_store_under_a_condition(a, idx, v):
    i = cuda.grid(1)
    k = idx[i]
    old = a[k]
    if v[i] > 0:
        a[k] = old + v[i]


def read_the_next_element(a, idx, v):
    i = cuda.grid(1)
    k = idx[i]
    a[k] = a[k + 1] + v[i]


def read_elsewhere_too(a, idx, v):
    i = cuda.grid(1)
    k = idx[i]
    a[k] += v[i]
    v[i] = a[0]


@pytest.mark.parametrize("fn", [add_at_gathered, scale_at_gathered])
def test_an_update_of_the_threads_own_element_is_accepted(fn):
    ir = _lower(fn)
    check_cross_thread_war(ir, ONE_D, owned_arrays(ir, ONE_D))       # no refusal


@pytest.mark.parametrize("fn", [read_then_store_under_a_condition, read_the_next_element, read_elsewhere_too])
def test_other_reads_of_a_written_array_keep_the_refusal(fn):
    ir = _lower(fn)
    with pytest.raises(UnsupportedError, match=r"'a' is written \(line \d+\) and read \(line \d+\) at indices "
                                               "that other threads may share"):
        check_cross_thread_war(ir, ONE_D, owned_arrays(ir, ONE_D))
