"""Global arrays whose cross-thread accesses a block's barriers order (harness/engine/analyses/ordering.py):
proven for wavefronts, an in-place scan and a Jacobi ping-pong, and not for any sibling in which two
threads may touch one element between the same two barriers, threads of two blocks share an element,
or an index may be negative."""
from __future__ import annotations

import dataclasses
import math

import pytest
from numba import cuda

from harness.core.errors import UnsupportedError
from harness.engine.analyses.ordering import barrier_ordered
from harness.engine.analyses.ownership import LaunchShape, check_cross_thread_war, owned_arrays
from harness.engine.frontend.normalize import lower_kernel
from harness.engine.frontend.source import parse_kernel, python_function
from harness.engine.ir.ssa import Param
from kernels import barrier_ordered as k
from kernels.public import softdtw_cuda

ONE_D = LaunchShape((0,), (0,))
SCALARS = {"n": "int64", "n_iter": "int64", "max_i": "int64", "max_j": "int64", "n_passes": "int64",
           "gamma": "float64", "inv_gamma": "float64", "bandwidth": "float64"}


def _lower(fn, ndim: int = 2):
    """The kernel's IR; every argument not in SCALARS is an `ndim`-dimensional float64 array."""
    fn = python_function(fn)
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    params = [Param(n, "scalar", SCALARS[n]) if n in SCALARS else Param(n, "array", "float64", ndim)
              for n in names]
    return lower_kernel(parse_kernel(fn), params)


@pytest.mark.parametrize("fn, arrays", [
    (softdtw_cuda.compute_softdtw_cuda, ["R"]),
    (softdtw_cuda.compute_softdtw_backward_cuda, ["R", "E"]),
    (k.wavefront_row, ["A"]),
    (k.scan_in_place, ["A"]),
    (k.jacobi_ping_pong, ["U", "V"]),
])
def test_orders_proven(fn, arrays):
    ir = _lower(fn, ndim=3 if fn.__module__.endswith("softdtw_cuda") else 2)
    for array in arrays:
        assert barrier_ordered(ir, ONE_D, array), array
    check_cross_thread_war(ir, ONE_D, owned_arrays(ir, ONE_D))      # no refusal


@pytest.mark.parametrize("fn", [k.wavefront_across_blocks, k.written_twice, k.wavefront_no_barrier])
def test_unordered_siblings_keep_the_refusal(fn):
    ir = _lower(fn, ndim=1 if fn is k.wavefront_across_blocks else 2)
    assert not barrier_ordered(ir, ONE_D, "A")
    with pytest.raises(UnsupportedError, match=r"'A' is written \(line \d+\) and read \(line \d+\) at indices "
                                               "that other threads may share"):
        check_cross_thread_war(ir, ONE_D, owned_arrays(ir, ONE_D))


def diagonal_read_may_wrap(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if t <= p:
            A[b, t, p - t] = math.sin(A[b, t + 1, p - t - 5]) * w[b, t, 0]
        cuda.syncthreads()


def diagonal_read_bounded(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if t + 5 <= p:
            A[b, t, p - t] = math.sin(A[b, t + 1, p - t - 5]) * w[b, t, 0]
        cuda.syncthreads()


def test_an_index_that_may_be_negative_is_not_proven():
    """i + j separates the read (p - 4) from the write (p) by 4, but with 4 columns the read's
    negative j wraps: A[b, t + 1, p - t - 5] is A[b, t + 1, p - t - 1], the element thread t + 1
    writes between the same barriers. A guard that bounds the index proves it non-negative."""
    assert not barrier_ordered(_lower(diagonal_read_may_wrap, ndim=3), ONE_D, "A")
    assert barrier_ordered(_lower(diagonal_read_bounded, ndim=3), ONE_D, "A")


def read_ahead_same_interval(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        A[b, t + 1] = math.sin(A[b, t]) * w[b, t]
        cuda.syncthreads()


def write_then_read_neighbour_after_barrier(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    A[b, t] = w[b, t] * 2.0
    cuda.syncthreads()
    w[b, t] = math.sin(A[b, t + 1])


def write_then_read_neighbour_without_barrier(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    A[b, t] = w[b, t] * 2.0
    w[b, t] = math.sin(A[b, t + 1])


def test_intervals_between_top_level_barriers():
    """Thread t + 1's write and thread t's read of one element: ordered by a barrier between them
    at the kernel's top level, a race without it, and a race within one loop iteration."""
    assert not barrier_ordered(_lower(read_ahead_same_interval), ONE_D, "A")
    assert barrier_ordered(_lower(write_then_read_neighbour_after_barrier), ONE_D, "A")
    assert not barrier_ordered(_lower(write_then_read_neighbour_without_barrier), ONE_D, "A")


def last_segment_meets_next_iteration(A, w, n):
    """The write after the loop's barrier and the next iteration's read before it share an
    interval: thread t + 1 writes A[b, t + 1] while thread t reads it."""
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        x = A[b, t + 1]
        cuda.syncthreads()
        A[b, t] = math.sin(x) * w[b, t]


def test_the_segment_after_the_last_barrier_runs_with_the_next_iterations_first():
    assert not barrier_ordered(_lower(last_segment_meets_next_iteration), ONE_D, "A")


def test_every_block_dimension_of_the_launch_must_be_in_the_index():
    """With blocks along y as well, threads of two blocks share blockIdx.x, and no barrier orders them."""
    assert barrier_ordered(_lower(k.wavefront_row), ONE_D, "A")
    assert not barrier_ordered(_lower(k.wavefront_row), LaunchShape((0, 1), (0,)), "A")


def test_a_function_differentiated_on_the_device_is_not_proven():
    """Its caller's barriers and indices are not known where it is analysed."""
    ir = dataclasses.replace(_lower(k.wavefront_row), param_forms={})
    assert not barrier_ordered(ir, ONE_D, "A")


def pinned_or_any_thread(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if t == p or n > 100:
            A[b, t + 1] = math.sin(A[b, t]) * w[b, t]
        cuda.syncthreads()


def any_thread_or_pinned(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if n > 100 or t == p:
            A[b, t + 1] = math.sin(A[b, t]) * w[b, t]
        cuda.syncthreads()


def pinned_in_else(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if t != p or n > 100:
            w[b, t] = 0.5 * w[b, t]
        else:
            A[b, t + 1] = math.sin(A[b, t]) * w[b, t]
        cuda.syncthreads()


def unpinned_in_else(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if t == p:
            w[b, t] = 0.5 * w[b, t]
        else:
            A[b, t + 1] = math.sin(A[b, t]) * w[b, t]
        cuda.syncthreads()


def test_only_conditions_that_hold_give_facts():
    """`t == p and ...` pins the writer to one thread per step, and so does the `else` of
    `t != p or ...`; `t == p or n > 100` does not (with n > 100 every thread writes between the
    same barriers what its neighbour reads), nor does the `else` of `t == p`."""
    assert barrier_ordered(_lower(k.wavefront_row), ONE_D, "A")
    assert barrier_ordered(_lower(pinned_in_else), ONE_D, "A")
    assert not barrier_ordered(_lower(pinned_or_any_thread), ONE_D, "A")
    assert not barrier_ordered(_lower(any_thread_or_pinned), ONE_D, "A")
    assert not barrier_ordered(_lower(unpinned_in_else), ONE_D, "A")


def one_cell_per_diagonal(A, w, n):
    b = cuda.blockIdx.x
    x = cuda.threadIdx.x
    y = cuda.threadIdx.y
    for p in range(n):
        if x + y == p:
            A[b, 0, x + y + 1] = math.sin(A[b, 0, x + y]) * w[b, y, x]
        cuda.syncthreads()


def test_a_pin_through_another_axis():
    """`if x + y == p` pins x to p - y: the tile wavefront's threads on one diagonal write distinct
    elements (their y differ), while A[b, 0, x + y + 1] is one element for the whole diagonal."""
    tile = LaunchShape((0, 1), (0, 1), (0,))
    assert barrier_ordered(_lower(k.wavefront_tile, ndim=3), tile, "A")
    assert not barrier_ordered(_lower(one_cell_per_diagonal, ndim=3), tile, "A")


def test_a_launch_of_one_block_needs_no_block_index():
    """All threads of a one-block launch meet at its barriers; with more blocks, thread 8 reads
    what thread 7 of another block writes, and no barrier orders the two."""
    ir = _lower(k.wavefront_across_blocks, ndim=1)
    assert barrier_ordered(ir, LaunchShape((0,), (0,), ()), "A")
    assert not barrier_ordered(ir, LaunchShape((0,), (0,), (0,)), "A")
    assert not barrier_ordered(ir, LaunchShape((0,), (0,)), "A")       # blocks unknown: any


def squares(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        A[b, t, t * t] = math.sin(A[b, t + 1, t * t + 1]) * w[b, t, 0]
        cuda.syncthreads()


def test_a_product_of_thread_coordinates_is_no_constant():
    """t * t and t * t + 1 differ by one for one thread, not for two: thread 0 reads A[b, 1, 1],
    which thread 1 writes between the same barriers."""
    assert not barrier_ordered(_lower(squares, ndim=3), ONE_D, "A")


def countdown_row(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    k = 0
    for p in range(n):
        A[b, k, t] = math.sin(A[b, k + 4, t + 1]) * w[b, t, 0]
        cuda.syncthreads()
        k -= 1


def test_a_loop_register_is_not_its_entry_value():
    """Rows k and k + 4 differ by 4, but k starts at 0 and goes negative: with 4 rows, A[b, -1, t]
    is A[b, 3, t], which thread t - 1 reads as A[b, k + 4, t] between the same barriers. The entry
    value of k proves nothing about the register inside the loop."""
    assert not barrier_ordered(_lower(countdown_row, ndim=3), ONE_D, "A")


def wavefront_syncwarp(A, w, n):
    b = cuda.blockIdx.x
    t = cuda.threadIdx.x
    for p in range(n):
        if t == p:
            A[b, t + 1] = math.sin(A[b, t]) * w[b, t]
        cuda.syncwarp()


def test_syncwarp_orders_no_two_warps():
    """In the primal (numba's compile) cuda.syncwarp() orders only one warp's lanes, so thread 32's
    read of what thread 31 wrote races, though the derivative kernels put a block barrier there."""
    assert barrier_ordered(_lower(k.wavefront_row), ONE_D, "A")
    assert not barrier_ordered(_lower(wavefront_syncwarp), ONE_D, "A")
