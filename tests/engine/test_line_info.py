"""Kernels compile with line info, and without it when NVVM rejects the line-info metadata
(numba-cuda 0.30 does for the reverse kernel of kernels/soundness.py:row_recurrence: a GPU run
errored with nvvmError ERROR_COMPILATION while the PTX tier, compiled without line info, passed)."""
from __future__ import annotations

import pytest

from harness.backends.base import with_line_info


class NvvmError(Exception):
    pass


def test_nvvm_rejection_retries_without_line_info():
    calls = []

    def compile_fn(lineinfo):
        calls.append(lineinfo)
        if lineinfo:
            raise NvvmError("ERROR_COMPILATION (9)")
        return "ptx"
    assert with_line_info(compile_fn) == "ptx" and calls == [True, False]


def test_other_compile_errors_are_not_retried():
    def compile_fn(lineinfo):
        raise TypeError("bad signature")
    with pytest.raises(TypeError):
        with_line_info(compile_fn)


def test_row_recurrence_reverse_compiles_in_the_ptx_tier(engine, backend):
    if backend.name != "ptx":
        pytest.skip("compiles real PTX: run with --backend ptx")
    import numpy as np

    from harness.core.activity import Duplicated
    from harness.engine.runtime.launch import LaunchConfig
    from harness.cases.inputs import load_kernel
    from tests.conftest import ROOT
    kernel = load_kernel("kernels/soundness.py:row_recurrence", ROOT)
    x, a = np.zeros((8, 5)), np.zeros(8)
    plan, _ = engine.prepare(kernel, LaunchConfig.threads(8, 8),
                             (Duplicated(x, np.zeros_like(x)), Duplicated(a, np.zeros_like(a)), 4), "reverse")
    assert ".entry" in plan.ptx
