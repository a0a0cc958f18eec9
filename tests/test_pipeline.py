"""The declared derivative pipeline (harness/engine/pipeline.py): named passes in order, explicit
pass state, the IR verifier between passes in debug runs; and the loop lowering's snapshot."""
from __future__ import annotations

import pytest

from harness.engine import pipeline
from harness.engine.ir import Param
from harness.engine.verify import IRError, ir_problems


PARAMS = [Param("out", "array", "float64", 1), Param("x", "array", "float64", 1), Param("n", "scalar", "int64")]


def _lower(fn):
    from harness.engine.frontend import parse_kernel
    from harness.engine.normalize import lower_kernel
    return lower_kernel(parse_kernel(fn), PARAMS)


def test_relowered_loop_body_lists_its_local_array_once(kernels):
    """The loop snapshot forgot local_arrays: a body lowered again (its carried types widened)
    listed its allocation twice (`local_arrays: ['tmp', 'tmp']`)."""
    ir = _lower(kernels.widen_with_scratch)
    assert [p.name for p in ir.local_arrays] == ["tmp"]
    assert ir_problems(ir) == []


def test_loop_snapshot_covers_every_lowerer_attribute(kernels):
    """A new attribute of the lowerer must be saved by the loop snapshot or be listed here as
    constant while one body is lowered, so a second lowering of a body cannot see the first's."""
    from harness.engine.frontend import parse_kernel
    from harness.engine.normalize import Lowerer
    lowerer = Lowerer(parse_kernel(kernels.widen_with_scratch), PARAMS)
    snap = lowerer.snapshot()
    saved = {"env", "versions", "taken", "ntemp", "types", "temps", "calls", "nested", "nodiff", "nloops",
             "njumps", "local_arrays", "params", "arrays"}
    constant = {"src", "prefix", "call_stack", "nodiff_depth", "user_names", "depth_ctl", "line"}
    assert set(vars(lowerer)) == saved | constant
    lowerer.local_arrays.append("junk")
    lowerer.params["junk"] = None
    lowerer.restore(snap)
    assert lowerer.local_arrays == [] and "junk" not in lowerer.params


def test_passes_are_declared_in_order():
    assert [name for name, _ in pipeline.PASSES] == [
        "lower", "record-calls", "analyze", "signature", "extrema", "generate"]


def _state(fn, mode="reverse"):
    from harness.engine.frontend import parse_kernel
    from harness.engine.jobs import CompilerJob
    from harness.engine.launch import LaunchConfig
    from harness.engine.seams import default_seams
    from harness.engine.signature import ArgInfo
    infos = [ArgInfo(k, p.name, p.kind, p.dtype, p.ndim, "C", "duplicated" if p.kind == "array" else "const", None)
             for k, p in enumerate(PARAMS)]
    job = CompilerJob(fn.__name__, mode, None)
    return pipeline.PassState(parse_kernel(fn), PARAMS, infos, mode, LaunchConfig.threads(8, 8).shape, job,
                              default_seams(), 64)


def test_verifier_names_the_pass_that_broke_the_ir(kernels):
    def duplicate_local_array(st):
        st.ir.local_arrays.append(st.ir.local_arrays[0])
    passes = pipeline.PASSES[:1] + (("broken", duplicate_local_array),) + pipeline.PASSES[1:]
    with pytest.raises(IRError, match=r"after pass 'broken': local array tmp listed 2 times"):
        pipeline.run_passes(_state(kernels.widen_with_scratch), verify_ir=True, passes=passes)
    pipeline.run_passes(_state(kernels.widen_with_scratch), verify_ir=False, passes=passes)   # only in debug runs


def test_verified_pipeline_generates_the_same_source(kernels):
    plain = pipeline.run_passes(_state(kernels.widen_with_scratch)).source
    checked = pipeline.run_passes(_state(kernels.widen_with_scratch), verify_ir=True).source
    assert plain == checked and "def widen_with_scratch__reverse" in plain


def test_engine_reads_the_debug_switch(monkeypatch, backend):
    from harness.engine.launch import Engine
    monkeypatch.setenv("HARNESS_VERIFY_IR", "1")
    assert Engine(backend).verify_ir is True
    monkeypatch.setenv("HARNESS_VERIFY_IR", "0")
    assert Engine(backend).verify_ir is False
    assert Engine(backend, verify_ir=True).verify_ir is True
