"""Branches that never both run in one launch (harness/engine/analyses/launch_branches.py): which
`if` conditions are the same across a launch, which statements may meet, and how accesses split
into the groups one launch can run. The case cases/ownership-launch-branches.yaml runs the kernels."""
from __future__ import annotations

from numba import cuda

from harness import Const, Duplicated, Reverse, autodiff

from harness.engine.analyses.launch_branches import launch_paths, launch_variants, may_meet
from harness.engine.frontend.normalize import lower_kernel
from harness.engine.frontend.source import parse_kernel, python_function
from harness.engine.ir.ssa import If, Param, Store, walk
from kernels import launch_branches as k

SCALARS = {"step": "int64", "n": "int64", "m": "int64"}


def _lower(fn, device: bool = False):
    fn = python_function(fn)
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    params = [Param(n, "scalar", SCALARS[n]) if n in SCALARS else
              Param(n, "array", "int64" if n == "flags" else "float64", 1) for n in names]
    ir = lower_kernel(parse_kernel(fn), params)
    if device:
        ir.param_forms = {p.name: None for p in params if p.kind == "scalar"}
    return ir


def _store_paths(ir, array):
    paths = launch_paths(ir)
    return [paths[id(s)] for s in walk(ir.body) if isinstance(s, Store) and s.array == array]


def _meet(ir):
    """Whether the stores of `a` and of `b` may run in one launch."""
    (pa,), (pb,) = _store_paths(ir, "a"), _store_paths(ir, "b")
    return may_meet(pa, pb)


def test_a_condition_on_scalar_arguments_or_read_only_arrays_separates_its_branches():
    assert not _meet(_lower(k.swap_by_parity))          # under a thread-dependent bounds check too
    assert not _meet(_lower(k.swap_by_flag_array))      # flags[0]: read-only, one index for all


def test_a_condition_on_the_thread_the_block_a_loop_counter_or_a_written_array_does_not():
    for fn in (k.swap_by_thread_parity, k.swap_by_block_parity, k.swap_in_a_loop, k.swap_by_written_flag):
        assert _meet(_lower(fn)), fn.__name__


def test_a_device_functions_scalar_parameters_may_differ_per_thread():
    assert _meet(_lower(k.swap_by_parity, device=True))


def count_then_branch(a, b, x, n, m):
    i = cuda.grid(1)
    c = 0
    if i < n:
        for j in range(m):
            c += 1
    if c > 0:
        a[i] = x[i]
    else:
        b[i] = x[i]


def uniform_count_then_branch(a, b, x, n, m):
    i = cuda.grid(1)
    c = 0
    for j in range(m):
        c += 1
    if c > 0:
        a[i] = x[i]
    else:
        b[i] = x[i]


def test_a_loop_register_is_launch_invariant_only_when_every_thread_runs_the_loop_alike():
    assert _meet(_lower(count_then_branch))             # threads with i >= n keep c = 0
    assert not _meet(_lower(uniform_count_then_branch))


def test_variants_split_at_each_if_with_items_on_both_sides_and_keep_the_rest_in_all():
    ir = _lower(k.swap_by_parity)
    branch = next(s for s in walk(ir.body) if isinstance(s, If) and s.orelse)
    items = [("outside", ()), ("then", ((id(branch), 0),)), ("else", ((id(branch), 1),))]
    groups = sorted(sorted(name for name, _ in g) for g in launch_variants(items, lambda x: x[1]))
    assert groups == [["else", "outside"], ["outside", "then"]]


def test_too_many_variants_fall_back_to_one_group_of_everything():
    items = [(n, ((n, side),)) for n in range(7) for side in (0, 1)]      # 2**7 choices
    assert launch_variants(items, lambda x: x[1], limit=64) == [items]
    assert len(launch_variants(items[:12], lambda x: x[1], limit=64)) == 64


def scale_and_flag(v, flags):
    v[cuda.grid(1)] *= 2.0
    flags[0] = 1.0


def choose_after_device_autodiff(a, b, x, dx, flags):
    """flags is passed to a device-side autodiff, whose function writes it: flags[0] read after the
    call may be another thread's doing, so threads may choose differently."""
    i = cuda.grid(1)
    autodiff(Reverse, scale_and_flag, Duplicated(x, dx), Const(flags))
    if flags[0] > 0:
        a[i] = x[i]
    else:
        b[i] = x[i]


def test_an_array_a_device_side_autodiff_is_passed_counts_as_written():
    fn = choose_after_device_autodiff
    params = [Param(n, "array", "float64", 1) for n in fn.__code__.co_varnames[:fn.__code__.co_argcount]]
    assert _meet(lower_kernel(parse_kernel(fn), params))
