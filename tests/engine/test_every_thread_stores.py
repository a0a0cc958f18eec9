"""Reverse mode refuses a store of a varied value that every thread makes to one element of a
differentiable array (harness/engine/analyses/ownership.py, check_stores_every_thread_makes): each
thread would add the element's cotangent into its value's adjoint (six times the gradient on the
H200 for TARDIS's populate_z). One thread storing, a constant stored by all, a thread's own local
array, and per-thread indices are accepted."""
from __future__ import annotations

import pytest
from numba import cuda, float64

from harness.core.errors import UnsupportedError
from harness.engine.analyses.activity import analyze
from harness.engine.analyses.ownership import LaunchShape
from harness.engine.frontend.normalize import lower_kernel
from harness.engine.frontend.source import parse_kernel
from harness.engine.ir.ssa import Param

ONE_D = LaunchShape((0,), (0,), (0,))


def _analyze(fn):
    params = [Param("out", "array", "float64", 1), Param("x", "array", "float64", 1),
              Param("p", "scalar", "float64")]
    ir = lower_kernel(parse_kernel(fn), params)
    return analyze(ir, {"out": "duplicated", "x": "duplicated", "p": "active"}, ONE_D, "reverse")


def every_thread_stores_p(out, x, p):
    for k in range(x.shape[0]):
        out[k] = p * x[k]


def every_thread_stores_a_read_value(out, x, p):
    out[0] = x[0] * x[0]


def thread_zero_stores(out, x, p):
    if cuda.grid(1) == 0:
        out[0] = p * x[0]


def every_thread_stores_a_constant(out, x, p):
    out[0] = 0.0
    cuda.atomic.add(out, 0, p * x[cuda.grid(1)])


def own_local_scratch(out, x, p):
    i = cuda.grid(1)
    t = cuda.local.array(1, float64)
    t[0] = p * x[i]
    out[i] = t[0]


def own_elements(out, x, p):
    i = cuda.grid(1)
    out[i] = p * x[i]


@pytest.mark.parametrize("fn", [every_thread_stores_p, every_thread_stores_a_read_value])
def test_a_varied_value_every_thread_stores_to_one_element_is_refused(fn):
    with pytest.raises(UnsupportedError, match=r"test_every_thread_stores.py:\d+: every thread stores to the same element 'out"):
        _analyze(fn)


@pytest.mark.parametrize("fn", [thread_zero_stores, every_thread_stores_a_constant, own_local_scratch, own_elements])
def test_one_writer_a_constant_a_local_array_or_own_elements_are_accepted(fn):
    analysis = _analyze(fn)          # no refusal, and the store's array stays differentiable
    assert analysis.activity["out"] == "duplicated"
