"""The declared derivative pipeline (harness/engine/pipeline.py): named passes in order, explicit
pass state, the IR verifier between passes in debug runs; and the loop lowering's snapshot."""
from __future__ import annotations

import pytest

from harness.engine import pipeline
from harness.engine.ir.ssa import Param
from harness.engine.ir.verify import IRError, ir_problems


PARAMS = [Param("out", "array", "float64", 1), Param("x", "array", "float64", 1), Param("n", "scalar", "int64")]


def _lower(fn):
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.frontend.normalize import lower_kernel
    return lower_kernel(parse_kernel(fn), PARAMS)


def test_relowered_loop_body_lists_its_local_array_once(kernels):
    """The loop snapshot forgot local_arrays: a body lowered again (its carried types widened)
    listed its allocation twice (`local_arrays: ['tmp', 'tmp']`)."""
    ir = _lower(kernels.widen_with_scratch)
    assert [p.name for p in ir.local_arrays] == ["tmp"]
    assert ir_problems(ir) == []


def _changed(value):
    """Another value of the same kind, so that a restore which misses a field shows."""
    if isinstance(value, dict):
        return {**value, "junk": None}
    if isinstance(value, (list, set)):
        return type(value)([*value, "junk"])
    if isinstance(value, int):
        return value + 7
    return object()


def test_loop_snapshot_restores_every_lowering_field(kernels):
    """Every field of the lowering state is restored by the loop snapshot unless it is marked kept
    (with its reason), so a second lowering of a loop body cannot see the first's, and a field added
    later is covered without anyone remembering it (the old snapshot forgot local_arrays)."""
    from dataclasses import fields
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.frontend.lower_state import LoweringState
    st = LoweringState.start(parse_kernel(kernels.widen_with_scratch), PARAMS)
    kept = {f.name for f in fields(st) if "kept" in f.metadata}
    assert kept == {"line"}                   # a new kept field needs a reason and a look here
    before = {f.name: getattr(st, f.name) for f in fields(st)}
    snap = st.snapshot()
    for f in fields(st):
        setattr(st, f.name, _changed(getattr(st, f.name)))
    st.restore(snap)
    for f in fields(st):
        if f.name not in kept:
            assert getattr(st, f.name) == before[f.name], f.name
    st.local_arrays.append("junk")            # a restored container is a copy: restoring twice works
    st.restore(snap)
    assert st.local_arrays == []


def test_passes_are_declared_in_order():
    assert [name for name, _ in pipeline.PASSES] == [
        "lower", "record-calls", "analyze", "signature", "extrema", "generate"]


def _state(fn, mode="reverse"):
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.runtime.jobs import CompilerJob
    from harness.engine.runtime.launch import LaunchConfig
    from harness.engine.seams import default_seams
    from harness.engine.runtime.signature import ArgInfo
    infos = [ArgInfo(k, p.name, p.kind, p.dtype, p.ndim, "C", "duplicated" if p.kind == "array" else "const", None)
             for k, p in enumerate(PARAMS)]
    job = CompilerJob(fn.__name__, mode, None)
    return pipeline.PassState(parse_kernel(fn), PARAMS, infos, mode, LaunchConfig.threads(8, 8).shape, job,
                              default_seams())


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
    from harness.engine.runtime.launch import Engine
    monkeypatch.setenv("HARNESS_VERIFY_IR", "1")
    assert Engine(backend).verify_ir is True
    monkeypatch.setenv("HARNESS_VERIFY_IR", "0")
    assert Engine(backend).verify_ir is False
    assert Engine(backend, verify_ir=True).verify_ir is True


@pytest.mark.parametrize("verify_ir", [True, False])
def test_engine_verifies_the_ir_after_every_pass_in_debug_runs(kernels, launching_backend, monkeypatch, verify_ir):
    """A real build through Engine._build: in a debug run the verifier sees the IR after each pass
    (the first has none before it runs), in a plain run never."""
    import numpy as np
    from harness.core.activity import Active, Duplicated
    from harness.engine.runtime.launch import Engine, LaunchConfig
    seen = []
    real = pipeline.verify
    monkeypatch.setattr(pipeline, "verify", lambda ir, after: (seen.append(after), real(ir, after)))
    be = launching_backend
    arr = lambda: be.asarray(np.linspace(0.5, 1.5, 16))
    Engine(be, verify_ir=verify_ir).launch(kernels.axpy, LaunchConfig.threads(16, 8), Duplicated(arr(), arr()),
                                           Active(1.5), Duplicated(arr(), arr()), Duplicated(arr(), arr()),
                                           mode="reverse")
    assert seen == ([name for name, _ in pipeline.PASSES] if verify_ir else [])


def test_pass_states_take_no_undeclared_attribute(kernels):
    """Lowering and emitting state is declared field by field: a step that sets anything else fails
    at once instead of adding state the loop snapshot (or a reader) does not know about."""
    from harness.engine.emission.codegen import Signature
    from harness.engine.emission.emit_state import EmitState
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.frontend.lower_state import LoweringState
    ir = _lower(kernels.widen_with_scratch)
    em = EmitState.start(ir, Signature(activity={p.name: "const" for p in ir.params}), set(), {}, None)
    st = LoweringState.start(parse_kernel(kernels.widen_with_scratch), PARAMS)
    for state in (st, em):
        with pytest.raises(AttributeError):
            state.undeclared = 1


def test_device_side_autodiff_goes_through_the_declared_pipelines(launching_backend, monkeypatch):
    """A kernel calling autodiff is built by AUTODIFF_KERNEL_PASSES, each call's device function by
    DEVICE_PASSES, and in a debug run the verifier sees the IR after every pass of both (it used to
    see none: the nested build called the passes by hand)."""
    import numpy as np
    from harness.core.activity import Const
    from harness.engine.runtime.launch import Engine, LaunchConfig
    from kernels.nested import df
    seen = []
    real = pipeline.verify
    monkeypatch.setattr(pipeline, "verify", lambda ir, after: (seen.append(after), real(ir, after)))
    be = launching_backend
    A, dA = be.asarray(np.array([3.0])), be.asarray(np.array([1.0]))
    Engine(be, verify_ir=True).launch(df, LaunchConfig.threads(1, 1), Const(A), Const(dA), mode="primal")
    device = [name for name, _ in pipeline.DEVICE_PASSES]
    kernel = [name for name, _ in pipeline.AUTODIFF_KERNEL_PASSES]
    # the device pipeline runs inside the kernel pipeline's device-functions pass, so its
    # verifications come before that pass's own
    at = kernel.index("device-functions")
    assert seen == kernel[:at] + device + kernel[at:]


def test_device_functions_get_the_engine_options(monkeypatch):
    """The nested Signature is built from the engine's options, not from defaults: a case's
    tape_size, recompute_limit and loop_jacobian_limit reach the device function too."""
    from harness.engine.runtime.jobs import CompilerJob
    from harness.engine.runtime.launch import EngineOptions, LaunchConfig
    from harness.engine.seams import default_seams
    from harness.engine.runtime.signature import ArgInfo
    from harness.engine.frontend.source import parse_kernel
    from kernels.nested import df
    signatures = []
    real = pipeline.device_signature
    monkeypatch.setattr(pipeline, "DEVICE_PASSES", tuple(
        (name, (lambda st: (real(st), signatures.append(st.sig))) if name == "signature" else run)
        for name, run in pipeline.DEVICE_PASSES))
    params = [Param("A", "array", "float64", 1), Param("dA", "array", "float64", 1)]
    infos = [ArgInfo(k, p.name, p.kind, p.dtype, p.ndim, "C", "const", None) for k, p in enumerate(params)]
    options = EngineOptions(tape_size=7, recompute_limit=5, loop_jacobian_limit=3)
    st = pipeline.PassState(parse_kernel(df), params, infos, "primal", LaunchConfig.threads(1, 1).shape,
                            CompilerJob("df", "primal", None), default_seams(), options)
    pipeline.run_passes(st, passes=pipeline.AUTODIFF_KERNEL_PASSES)
    assert [(s.options.tape_size, s.options.recompute_limit, s.options.loop_jacobian_limit) for s in signatures] == [(7, 5, 3)]
    assert "def f__reverse_dev0" in st.source and "def df__primal" in st.source
