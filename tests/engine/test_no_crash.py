"""No exception but a refusal leaves the engine, and the errors around it read clearly.

* the engine's last line of defence (harness/engine/guard.py): an unexpected exception inside the
  engine becomes an EngineInternalError that says it is an engine bug, names the kernel's file and
  the line being lowered, and chains the original; the verdicts never count it as an expected refusal;
* a stored traceback keeps the raising line (harness/execution/tracebacks.py);
* a negative-stride view on a backend that cannot pass one is the launch contract's KernelError
  naming the argument (harness/engine/runtime/signature.py).
"""
from __future__ import annotations

import ast

import numpy as np
import pytest

from harness.core.errors import EngineInternalError, KernelError, UnsupportedError
from harness.engine.guard import BUG_MARK, internal_errors_refused
from harness.execution.tracebacks import format_both_ends


# ----------------------------------------------------------------------------- the guard itself

def _lowering(node):
    return [][node.lineno]                       # an engine bug: IndexError while lowering `node`


def test_an_unexpected_exception_becomes_an_engine_bug_refusal_at_the_line_being_lowered():
    node = ast.parse("\n\n\nx = 1").body[0]      # line 4 of the "kernel"
    with pytest.raises(EngineInternalError) as info:
        with internal_errors_refused(_lowering, "building it"):
            _lowering(node)
    err = info.value
    assert isinstance(err, UnsupportedError)     # callers handling refusals keep working
    assert BUG_MARK in str(err) and "not a limit" in str(err)
    assert err.line == 4 and err.file == _lowering.__code__.co_filename
    assert isinstance(err.__cause__, IndexError)
    assert "IndexError: list index out of range" in str(err)


def test_deliberate_errors_pass_the_guard_unchanged():
    refusal = UnsupportedError("a real limit", file="k.py", line=3)
    with pytest.raises(UnsupportedError) as info:
        with internal_errors_refused(_lowering, "building it"):
            raise refusal
    assert info.value is refusal
    with pytest.raises(KernelError):
        with internal_errors_refused(_lowering, "building it"):
            raise KernelError("argument 0 ('x'): not isbits", argument=0, param="x")


def test_an_engine_bug_is_never_an_expected_refusal():
    from harness.model import Expectation
    from harness.execution.verdicts import judge
    bug = EngineInternalError(f"{BUG_MARK} while building it: KeyError: 'x'", file="k.py", line=2)
    for kind in ("unsupported", "pass"):
        state, message = judge(Expectation(kind=kind), [], bug)
        assert state == "ERROR" and BUG_MARK in message
    assert judge(Expectation(kind="unsupported"), [], UnsupportedError("limit"))[0] == "UNSUPPORTED"


def test_the_engine_entry_point_turns_a_crash_into_an_engine_bug(kernels, backend):
    from harness.core.activity import Duplicated
    from harness.engine.runtime.launch import Engine, LaunchConfig
    from harness.engine.seams import default_seams

    def broken_analysis(*args, **kwargs):
        raise KeyError("a name the analysis forgot")
    engine = Engine(backend, seams=default_seams().replace(owned_arrays=broken_analysis))
    n = 8
    args = (Duplicated(backend.asarray(np.zeros(n)), backend.asarray(np.ones(n))),
            Duplicated(backend.asarray(np.ones(n)), backend.asarray(np.zeros(n))))
    with pytest.raises(EngineInternalError) as info:
        engine.prepare(kernels.read_first, LaunchConfig.threads(n, n), args, "reverse")
    err = info.value
    assert err.file.endswith("kernels_for_tests.py") and err.line is not None
    assert isinstance(err.__cause__, KeyError) and "raised at engine/" in str(err)   # the engine frame that called it
    # the same kernel builds with the real analysis: the guard changed nothing else
    Engine(backend).prepare(kernels.read_first, LaunchConfig.threads(n, n), args, "reverse")


# ----------------------------------------------------------------------------- stored tracebacks

def _deep(k):
    if k == 0:
        raise ValueError("the raising line")
    return _deep(k - 1)


def test_a_stored_traceback_keeps_the_raising_line_and_the_outermost_frames():
    try:
        _deep(40)
    except ValueError as exc:
        text = format_both_ends(exc)
    assert 'raise ValueError("the raising line")' in text      # innermost
    assert "_deep(40)" in text                                 # outermost (this test's frame)
    assert "frames left out" in text
    assert text.count("in _deep") < 20


def test_a_chained_traceback_keeps_both_exceptions():
    try:
        try:
            _deep(3)
        except ValueError as inner:
            raise RuntimeError("outer") from inner
    except RuntimeError as exc:
        text = format_both_ends(exc)
    assert "ValueError: the raising line" in text and "RuntimeError: outer" in text
    assert "direct cause" in text


# ----------------------------------------------------------------------------- negative strides

class _NoNegativeStrides:
    """A backend that, like the cuda one, cannot pass a negative stride (host arrays stand in)."""
    negative_strides = False

    @staticmethod
    def is_array(value):
        return isinstance(value, np.ndarray)


def test_a_negative_stride_view_is_refused_naming_the_argument_and_numba():
    from harness.core.activity import Const, Duplicated
    from harness.engine.runtime.signature import classify
    x = np.arange(8.0)
    with pytest.raises(KernelError) as info:
        classify(_NoNegativeStrides(), ["out", "x"], (Duplicated(np.zeros(8), np.ones(8)), Const(x[::-1])), "forward")
    err = info.value
    assert err.param == "x" and err.argument == 1
    assert "negative strides" in str(err) and "numba.cuda's own dispatcher" in str(err)
    with pytest.raises(KernelError, match="its shadow"):
        classify(_NoNegativeStrides(), ["out"], (Duplicated(np.zeros(8), np.ones(8)[::-1]),), "forward")
    # positive strides and contiguous arrays are untouched
    infos = classify(_NoNegativeStrides(), ["out", "x"], (Duplicated(np.zeros(8), np.ones(8)), Const(x[::2])), "forward")
    assert [i.layout for i in infos] == ["C", "A"]


def test_backends_that_can_pass_negative_strides_still_do():
    from harness.backends.cuda import CudaBackend
    from harness.core.target import Backend
    assert Backend.negative_strides and not CudaBackend.negative_strides


def test_a_plain_exception_from_numbas_own_code_is_numbas_refusal():
    """numba's lowering of the user's unchanged kernel can fail with a plain exception (in-place
    arithmetic on a view: KeyError <ufunc 'add'>); raised in numba's code, it is numba's refusal.
    The same exception raised anywhere else stays what it is."""
    from harness.core.errors import UnsupportedError
    from harness.engine.guard import numba_refusals_named

    def kernel(out):
        pass

    numba_code, elsewhere = {}, {}
    exec(compile("def lower():\n    raise KeyError('add')\n", "/site-packages/numba_cuda/numba/cuda/fake.py", "exec"),
         numba_code)
    exec(compile("def lower():\n    raise KeyError('add')\n", "/work/project/other.py", "exec"), elsewhere)
    with pytest.raises(UnsupportedError, match=r"numba.cuda itself refuses to compile kernel kernel \(KeyError"):
        with numba_refusals_named(kernel):
            numba_code["lower"]()
    with pytest.raises(KeyError):
        with numba_refusals_named(kernel):
            elsewhere["lower"]()
