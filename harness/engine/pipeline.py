"""The derivative pipelines, declared: named passes in order over one explicit PassState.

    PASSES (a kernel's derivative):
        lower -> record-calls -> analyze -> signature -> extrema -> generate
    DEVICE_PASSES (one `autodiff` call inside a kernel, as a device function):
        lower-device -> record-calls -> analyze -> refuse-extrema -> signature -> generate-device
            -> result-types
    AUTODIFF_KERNEL_PASSES (the primal of a kernel that calls `autodiff`):
        lower -> record-calls -> device-functions (DEVICE_PASSES per call) -> generate-primal

`analyze` is the analysis pipeline that host kernels and device-side autodiff share
(analysis.analyze: local-array activities, taped loads, varied values, the Const-array check,
ownership, the cross-thread write-after-read check). Each pass reads and writes fields of
PassState, nothing else. In debug runs (Engine(verify_ir=True),
or HARNESS_VERIFY_IR=1) the IR verifier (verify.py) runs after every pass that has an IR. Compiling
the generated source and launching it is the Engine's job (launch.py).
"""
from __future__ import annotations

import os
from typing import Callable

from harness.engine.analyses import activity as analysis, gather
from harness.engine.emission import coarsen
from harness.engine.analyses.activity import DIFFERENTIABLE, extremum_atomics
from harness.engine.runtime import nested as device
from harness.engine.emission.emit_state import differentiable_arrays
from harness.engine.emission.codegen import Signature, describe, function_text, generate, module_text
from harness.engine.ir.ssa import Assign, Load, walk
from harness.engine.runtime.nested import record_inlined_calls
from harness.engine.frontend.normalize import lower_kernel
from harness.engine.pass_state import PassState
from harness.engine.ir.verify import verify


def lower(st: PassState):
    st.ir = lower_kernel(st.src, st.params)


def record_calls(st: PassState):
    record_inlined_calls(st.job, st.ir)


def analyze(st: PassState):
    declared = {i.name: i.activity for i in st.infos} if st.declared is None else st.declared
    info = analysis.analyze(st.ir, declared, st.launch_shape, st.mode, seams=st.seams)
    st.activity, st.varied, st.owned = info.activity, info.varied, info.owned


def signature(st: PassState):
    loaded = {s.expr.array for s in walk(st.ir.body) if isinstance(s, Assign) and isinstance(s.expr, Load)}
    st.sig = Signature(activity=st.activity, width=max(i.width for i in st.infos),
                       owned=frozenset(st.owned),
                       skip_store=frozenset(i.name for i in st.infos
                                            if i.activity == "duplicated_no_need" and i.name not in loaded),
                       options=st.options)
    exclusive = st.seams.interval_exclusive
    if st.mode == "reverse":              # shared shadows that plain adds update between barriers
        st.sig.exclusive = frozenset(
            p.name for p in st.ir.local_arrays if p.kind == "shared" and p.name not in st.sig.owned
            and st.activity.get(p.name) in DIFFERENTIABLE and exclusive(st.ir, st.launch_shape, p.name))
        # accesses of plainly updated shadows that one thread makes at different elements
        st.sig.apart = frozenset().union(*(st.seams.apart_in_thread(st.ir, a) for a in st.sig.owned | st.sig.exclusive))
    if st.mode == "reverse" and st.options.gather_stencils:   # adjoints gathered from their readers, not scattered
        st.sig.gather = gather.gathered_arrays(st.ir, st.activity, differentiable_arrays(st.ir, st.activity),
                                               st.sig.owned, st.launch_shape)
    if st.options.coarsen_blocks_per_sm > 0 and coarsen.refusal(st.ir, st.activity, st.sig.owned, st.sig.gather, st.mode) is None:
        st.sig.coarsen = coarsen.axes(st.launch_shape)


def extrema(st: PassState):
    st.extrema = extremum_atomics(st.ir, st.activity)


def emit(st: PassState):
    seams = {"emitters": st.seams.emitters, "rules": st.seams.rules}
    origin = f"{st.src.file}:{st.src.tree.lineno}"
    if st.extrema:                        # atomic max/min: passes that find each winner first
        texts = [function_text(st.ir, m, st.sig, st.varied, extrema=st.extrema, **seams)
                 for m in ("extrema1", "extrema2", st.mode)]
        st.fname = texts[-1][0]
        st.source = module_text(describe(st.ir, st.mode, st.sig, origin), [t for _, t in texts])
    else:
        st.fname, st.source = generate(st.ir, st.mode, st.sig, st.varied, origin, **seams)


def device_signature(st: PassState):
    """A device function's specialisation: its own activities and owned arrays, the case's limits."""
    st.sig = Signature(activity=st.activity, owned=frozenset(st.owned), options=st.options)


def emit_device(st: PassState):
    st.fname = f"{st.src.name}__{st.mode}_dev{st.index}"
    _, st.source = function_text(st.ir, st.mode, st.sig, st.varied, device=True, name=st.fname,
                                 emitters=st.seams.emitters, rules=st.seams.rules)


def device_functions(st: PassState):
    """Each `autodiff` call of the kernel as a device function, through DEVICE_PASSES: a child job
    configured as its parent (or as the host with nested_config: native, the historical bug)."""
    names = {}
    for call in st.ir.nested:
        child_st = device.device_state(st, call, len(st.device_functions))
        run_passes(child_st, st.verify_ir, DEVICE_PASSES)
        names[id(call)] = child_st.fname
        st.device_functions.append((child_st.fname, child_st.source))
        loops = device.taped_loops(child_st)
        if loops:
            st.nested_tapes[id(call)] = loops
    st.nested_names = names


def emit_autodiff_kernel(st: PassState):
    sig = Signature(activity={p.name: "const" for p in st.params}, options=st.options)
    st.fname, text = function_text(st.ir, "primal", sig, set(), nested_names=st.nested_names,
                                   nested_tapes=st.nested_tapes, emitters=st.seams.emitters, rules=st.seams.rules)
    # generated kernels carry this text: it keeps the module's path from before the layout change,
    # so that they stay byte-identical (change it together with the kernels it changes)
    doc = (f"Primal kernel `{st.ir.name}` ({st.src.file}:{st.src.tree.lineno}) with its device-side autodiff "
           f"calls compiled as device functions.\n\nGenerated by the harness AD engine; do not edit.") \
        if st.ir.nested else (f"Primal kernel `{st.ir.name}` ({st.src.file}:{st.src.tree.lineno}), generated: "
                              "numba.cuda cannot compile a function it calls (harness/engine/libm.py).\n\n"
                              "Generated by the harness AD engine; do not edit.")
    st.source = module_text(doc, [t for _, t in st.device_functions] + [text])


Pass = tuple[str, Callable[[PassState], None]]

PASSES: tuple[Pass, ...] = (
    ("lower", lower),
    ("record-calls", record_calls),
    ("analyze", analyze),
    ("signature", signature),
    ("extrema", extrema),
    ("generate", emit),
)

DEVICE_PASSES: tuple[Pass, ...] = (
    ("lower-device", device.lower_device),
    ("record-calls", record_calls),
    ("analyze", analyze),
    ("refuse-extrema", device.refuse_extrema),
    ("signature", device_signature),
    ("generate-device", emit_device),
    ("result-types", device.result_types),
)

AUTODIFF_KERNEL_PASSES: tuple[Pass, ...] = (
    ("lower", lower),
    ("record-calls", record_calls),
    ("device-functions", device_functions),
    ("generate-primal", emit_autodiff_kernel),
)


def verify_by_default() -> bool:
    return os.environ.get("HARNESS_VERIFY_IR", "") not in ("", "0")


def run_passes(st: PassState, verify_ir: bool = False, passes=PASSES) -> PassState:
    st.verify_ir = verify_ir
    for name, run in passes:
        run(st)
        if verify_ir and st.ir is not None:
            verify(st.ir, after=name)
    return st
