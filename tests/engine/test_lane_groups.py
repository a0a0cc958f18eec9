"""Reads whose adjoint a block row's (or column's) lanes sum through the warp before one lane adds
it (analyses/lane_groups.py, emission/emit_lane_sums.py): which reads qualify along which axis, and
the reverse kernel's structure. Their gradients are judged by the case suite (cases/lane-sums-row-reads.yaml)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

from harness.core.activity import Duplicated
from harness.engine.analyses.lane_groups import lane_group_reads
from harness.engine.frontend.normalize import lower_kernel
from harness.engine.frontend.source import parse_kernel
from harness.engine.ir.ssa import Assign, Load, Param, walk
from tests.conftest import ROOT

PARAMS = [Param("out", "array", "float64", 2), Param("w", "array", "float64", 2), Param("n", "scalar", "int64")]


def _reads(fn, owned=frozenset(), device=False) -> list[tuple[str, str]]:
    """(array, axis) of each read the analysis picks, in program order."""
    ir = lower_kernel(parse_kernel(fn), PARAMS)
    found = lane_group_reads(ir, owned, device)
    return [(s.expr.array, found[id(s)]) for s in walk(ir.body)
            if isinstance(s, Assign) and isinstance(s.expr, Load) and id(s) in found]


def row_index(out, w, n):
    ty = cuda.threadIdx.y
    c, r = cuda.grid(2)
    acc = 0.0
    for k in range(n):                      # a block-uniform trip count
        acc += w[ty, k] + w[cuda.blockIdx.y, 0]
    out[r, c] = acc


def column_index(out, w, n):
    tx = cuda.threadIdx.x
    c, r = cuda.grid(2)
    out[r, c] = w[0, tx] + w[r, c] + w[cuda.threadIdx.z, c]


def under_bounds_check(out, w, n):
    c, r = cuda.grid(2)
    if c < n:
        out[r, c] = w[cuda.threadIdx.y, 0]


def after_early_return(out, w, n):
    c, r = cuda.grid(2)
    if c >= n:
        return
    out[r, c] = w[cuda.threadIdx.y, 0]


def thread_dependent_trip_count(out, w, n):
    c, r = cuda.grid(2)
    acc = 0.0
    for k in range(cuda.threadIdx.x):
        acc += w[cuda.threadIdx.y, 0]
    out[r, c] = acc


def index_from_a_load(out, w, n):
    c, r = cuda.grid(2)
    k = int(w[0, 0])
    out[r, c] = w[cuda.threadIdx.y, k]


def test_reads_at_row_uniform_indices_in_uniform_control_qualify():
    assert _reads(row_index) == [("w", "x"), ("w", "x")]


def test_reads_whose_index_varies_along_the_row_take_the_column_or_nothing():
    # w[0, tx] and w[tz, c] are the same along y; w[r, c] varies along both axes
    assert _reads(column_index) == [("w", "y"), ("w", "y")]


@pytest.mark.parametrize("fn", [under_bounds_check, after_early_return, thread_dependent_trip_count])
def test_reads_that_not_every_thread_reaches_do_not(fn):
    assert _reads(fn) == []


def test_an_index_from_a_load_does_not():
    assert _reads(index_from_a_load) == [("w", "x")]          # w[0, 0] itself, not w[ty, k]


def test_thread_owned_arrays_and_device_functions_do_not():
    assert _reads(row_index, owned=frozenset({"w"})) == []
    assert _reads(row_index, device=True) == []


def _reverse_source(backend, name: str, block=(8, 4)) -> str:
    from harness.cases.inputs import load_kernel
    from harness.engine.runtime.launch import Engine, LaunchConfig
    kernel = load_kernel(f"kernels/lane_sums.py:{name}", ROOT)
    rng = np.random.default_rng(0)

    def dup(shape):
        return Duplicated(backend.asarray(rng.standard_normal(shape)), backend.asarray(rng.standard_normal(shape)))
    plan, _ = Engine(backend).prepare(kernel, LaunchConfig.of((2, 2), block),
                                      [dup((7, 13)), dup((7, 13)), dup((7, 5))], "reverse")
    return Path(plan.source_path).read_text()


def test_the_row_reads_of_the_tile_kernel_are_summed_through_the_warp(backend):
    text = _reverse_source(backend, "row_weights")
    # the five reads of the row's weights: one batch of 8 (5 padded), one atomic per lane group
    assert "if _wg >= 8:" in text
    assert len(re.findall(r"cuda\.shfl_xor_sync\(_wm, _ws\d+ if _wh else ", text)) == 4 + 2 + 1
    # lane p of a group holds value p: the first five lanes add, each at its value's index (the
    # taps k = 3, 2, 1, 0 in the reverse sweep's order, then TAPS: no progression, a select)
    assert re.search(r"^\s+if _wpx < 5:$", text, re.M)
    assert "(ty, (k_3 if _wpx == 0 else (k_2 if _wpx == 1 else (k_1 if _wpx == 2 else (k if _wpx == 3 else (4))))))" in text
    assert len(re.findall(r"cuda\.atomic\.add\(d_sw, ", text)) == 1 + 5    # the group's, the fallback's
    # no read there is the same along y only (w[r, tx] sits under `if tx < TAPS + 1`)
    assert "_yg" not in text


def test_reads_under_the_bounds_check_keep_one_atomic_per_thread(backend):
    text = _reverse_source(backend, "row_weights_guarded")
    assert "shfl" not in text and "_wg" not in text
    assert len(re.findall(r"cuda\.atomic\.add\(d_w, ", text)) == 5


def test_an_unrolled_counters_indices_are_computed_from_the_lane_position(backend):
    """The tiled product's reads sa[ty, j] and sb[j, tx], j = 15, ..., 0 unrolled: lane p of a row
    group adds the sum for j = 15 - p, a column group's pairs (j, j - 1) likewise, with no select
    of one index per lane; the eight column batches share their group-size tests."""
    from harness.cases.inputs import load_kernel
    from harness.engine.runtime.launch import Engine, LaunchConfig
    kernel = load_kernel("kernels/tiled.py:tiled_matmul", ROOT)
    rng = np.random.default_rng(0)

    def dup():
        return Duplicated(backend.asarray(rng.standard_normal((32, 32)).astype(np.float32)),
                          backend.asarray(rng.standard_normal((32, 32)).astype(np.float32)))
    plan, _ = Engine(backend).prepare(kernel, LaunchConfig.of((2, 2), (16, 16)), [dup(), dup(), dup()], "reverse")
    text = Path(plan.source_path).read_text()
    assert "cuda.atomic.add(d_sa, (ty, (15 + -1 * _wpx)), " in text
    for j in (15, 13, 11, 9, 7, 5, 3, 1):
        assert f"cuda.atomic.add(d_sb, (({j} + -1 * _wpy), tx), " in text
    assert " if _wpx == " not in text and " if _wpy == " not in text
    assert text.count("if _yg >= 2:") == 1 and text.count("if _yg > 2:") == 1
