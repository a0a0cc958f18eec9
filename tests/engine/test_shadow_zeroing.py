"""The zeroing of a shared shadow in a reverse kernel's forward sweep ends with its own barrier
only where no later barrier orders it (emit_parallel.zeroing_ordered_later): a top-level barrier
after the allocation, which every thread reaches before the reverse sweep first touches the
shadow, does. The gradients are judged by the case suite (cases/barrier-uniform-loops.yaml,
cases/shared-block-sum.yaml, cases/barrier-tiled-matmul.yaml)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import cuda, float64

from harness.core.activity import Duplicated
from tests.conftest import ROOT

ZEROED = "# every shadow element is zero before any thread accumulates"


def _reverse_source(backend, kernel: str, arrays: dict, launch) -> str:
    from harness.cases.inputs import load_kernel
    from harness.engine.runtime.launch import Engine, LaunchConfig
    rng = np.random.default_rng(0)
    args = [Duplicated(backend.asarray(rng.standard_normal(shape).astype(dtype)),
                       backend.asarray(rng.standard_normal(shape).astype(dtype))) for shape, dtype in arrays.values()]
    plan, _ = Engine(backend).prepare(load_kernel(kernel, ROOT), LaunchConfig.of(*launch), args, "reverse")
    return Path(plan.source_path).read_text()


def test_a_top_level_barrier_after_the_allocation_orders_the_zeroing(backend):
    text = _reverse_source(backend, "kernels/barriers.py:tree_sum_halving",
                           {"out": ((2,), np.float64), "x": ((100,), np.float64)}, (2, 64))
    assert "d_sm[_z] = 0" in text and ZEROED not in text
    # the zeroing comes before the first top-level barrier of the forward sweep
    assert text.index("d_sm[_z] = 0") < text.index("cuda.syncthreads()")


def test_barriers_only_inside_loops_leave_the_zeroing_its_own(backend):
    text = _reverse_source(backend, "kernels/tiled.py:tiled_matmul",
                           {k: ((32, 32), np.float32) for k in "ABC"}, ((2, 2), (16, 16)))
    assert text.count(ZEROED) == 2           # d_sa's and d_sb's


def owned_shared(out, x):
    """Each thread touches only its own element of sh: a thread-owned shadow, read early."""
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    sh[t] = x[i] * x[i]
    cuda.syncthreads()
    out[i] = sh[t] * 2.0


def test_a_thread_owned_shadow_keeps_its_barrier(backend):
    """Its shadow may be read early, in the forward sweep, before the later barrier."""
    from harness.engine.analyses.ownership import LaunchShape, owned_arrays
    from harness.engine.frontend.normalize import lower_kernel
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.ir.ssa import Param
    ir = lower_kernel(parse_kernel(owned_shared), [Param("out", "array", "float64", 1), Param("x", "array", "float64", 1)])
    assert "sh" in owned_arrays(ir, LaunchShape((0,), (0,)))
    text = _reverse_source(backend, "tests/engine/test_shadow_zeroing.py:owned_shared",
                           {"out": ((128,), np.float64), "x": ((128,), np.float64)}, (2, 64))
    assert ZEROED in text
