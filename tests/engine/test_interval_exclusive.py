"""Shared shadows that take plain adds (ordering.interval_exclusive): between two barriers each
element of the shared array is touched by one thread of the block at most, so the reverse sweep,
which mirrors every barrier, updates each shadow element from one thread per interval. A tree
level (`if t < s: sh[t] += sh[t + s]`) qualifies, in a `while` loop, unrolled, and along one axis of
a 2-D block; elements that several threads read between the same barriers (a block's sum read by
every thread, neighbours' reads) keep the atomics, and so does what the analysis cannot prove.
The gradients of these kernels are checked against finite differences by
cases/barrier-uniform-loops.yaml (halving variants) and cases/shared-block-sum.yaml."""
from __future__ import annotations

import dataclasses

from numba import cuda, float64

from harness.engine.analyses.ordering import interval_exclusive
from harness.engine.analyses.ownership import LaunchShape
from harness.engine.frontend.normalize import lower_kernel
from harness.engine.frontend.source import parse_kernel, python_function
from harness.engine.ir.ssa import Param
from kernels import barriers, shared

ONE_D = LaunchShape((0,), (0,))
TWO_D = LaunchShape((0, 1), (0, 1))


def _lower(fn, ndims: dict | None = None):
    """The kernel's IR; its arguments are float64 arrays, 1-D unless `ndims` says otherwise."""
    fn = python_function(fn)
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    params = [Param(n, "array", "float64", (ndims or {}).get(n, 1)) for n in names]
    return lower_kernel(parse_kernel(fn), params)


def test_tree_levels_take_plain_adds():
    assert interval_exclusive(_lower(barriers.tree_sum_halving_linear), ONE_D, "sm")
    assert interval_exclusive(_lower(barriers.tree_sum_halving), ONE_D, "sm")      # a product per level
    assert interval_exclusive(_lower(shared.block_sum), ONE_D, "sh")               # levels unrolled
    assert interval_exclusive(_lower(barriers.tree_rows_2d, {"x": 2}), TWO_D, "sm")


def test_a_sum_every_thread_reads_keeps_the_atomics():
    assert not interval_exclusive(_lower(barriers.tree_then_normalize), ONE_D, "sm")


def test_a_level_the_analysis_cannot_bound_keeps_the_atomics():
    """The doubling tree's guard `tid % (2 * s) == 0` is not affine: nothing separates the
    elements that two threads touch."""
    assert not interval_exclusive(_lower(barriers.tree_sum_doubling), ONE_D, "sm")


def neighbours_read(out, x):
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    sh[t] = x[t]
    cuda.syncthreads()
    out[t] = sh[t] * sh[t + 1]         # threads t and t + 1 both read element t + 1


def neighbour_read_alone(out, x):
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    sh[t] = x[t]
    cuda.syncthreads()
    out[t] = sh[t + 1] * 2.0           # each element read by one thread in this interval


def unguarded_level(out, x):
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    sh[t] = x[t]
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        sh[t] += sh[t + s] * 0.5       # no `if t < s`: thread t + s writes what thread t reads
        cuda.syncthreads()
        s //= 2
    out[t] = sh[t]


def sum_read_by_two_threads(out, x):
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    sh[t] = x[t]
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            sh[t] += sh[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:                        # threads 0 and 1 read element 0 between the same barriers
        out[0] = sh[0] * 2.0
    if t == 1:
        out[1] = sh[0] * 3.0


def test_elements_two_threads_touch_in_one_interval_keep_the_atomics():
    assert not interval_exclusive(_lower(neighbours_read), ONE_D, "sh")
    assert interval_exclusive(_lower(neighbour_read_alone), ONE_D, "sh")
    assert not interval_exclusive(_lower(unguarded_level), ONE_D, "sh")
    assert not interval_exclusive(_lower(sum_read_by_two_threads), ONE_D, "sh")



def test_a_function_differentiated_on_the_device_is_not_proven():
    ir = dataclasses.replace(_lower(barriers.tree_sum_halving_linear), param_forms={})
    assert not interval_exclusive(ir, ONE_D, "sm")
