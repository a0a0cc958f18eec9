"""The derivative pipeline, declared: named passes in order over one explicit PassState.

    lower -> record-calls -> analyze -> signature -> extrema -> generate

`analyze` is the analysis pipeline that host kernels and device-side autodiff share
(analysis.analyze: local-array activities, taped loads, varied values, the Const-array check,
ownership, the cross-thread write-after-read check). Each pass reads and writes fields of
PassState, nothing else. In debug runs (Engine(verify_ir=True),
or HARNESS_VERIFY_IR=1) the IR verifier (verify.py) runs after every pass that has an IR. Compiling
the generated source and launching it is the Engine's job (launch.py).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from . import analysis, coarsen, gather
from .analysis import extremum_atomics
from .emit_state import differentiable_arrays
from .codegen import Signature, describe, function_text, generate, module_text
from .ir import Assign, KernelIR, Load, walk
from .nested import record_inlined_calls
from .normalize import lower_kernel
from .verify import verify


@dataclass
class PassState:
    """What the passes share: the inputs (set by the Engine) and each pass's results."""
    src: Any                          # frontend.KernelSource
    params: list                      # ir.Param per kernel argument
    infos: list                       # signature.ArgInfo per kernel argument
    mode: str                         # forward | reverse
    launch_shape: Any                 # analysis.LaunchShape
    job: Any                          # jobs.CompilerJob of this kernel
    seams: Any                        # seams.Seams
    tape_size: int
    recompute_limit: int = 64
    gather_stencils: bool = False
    coarsen: bool = True                              # coarsen reverse kernels where proven (coarsen.py)
    loop_jacobian_limit: int = 16
    ir: KernelIR | None = None
    activity: dict = field(default_factory=dict)      # name -> activity, local arrays included
    varied: set = field(default_factory=set)          # values that carry a derivative
    owned: set = field(default_factory=set)           # arrays whose adjoints need no atomics (reverse)
    sig: Signature | None = None
    extrema: list = field(default_factory=list)       # atomic max/min statements
    fname: str = ""                                   # the generated kernel's name
    source: str = ""                                  # the generated module's text


def lower(st: PassState):
    st.ir = lower_kernel(st.src, st.params)


def record_calls(st: PassState):
    record_inlined_calls(st.job, st.ir)


def analyze(st: PassState):
    info = analysis.analyze(st.ir, {i.name: i.activity for i in st.infos}, st.launch_shape, st.mode, seams=st.seams)
    st.activity, st.varied, st.owned = info.activity, info.varied, info.owned


def signature(st: PassState):
    loaded = {s.expr.array for s in walk(st.ir.body) if isinstance(s, Assign) and isinstance(s.expr, Load)}
    st.sig = Signature(activity=st.activity, width=max(i.width for i in st.infos),
                       owned=frozenset(st.owned),
                       skip_store=frozenset(i.name for i in st.infos
                                            if i.activity == "duplicated_no_need" and i.name not in loaded),
                       tape_size=st.tape_size, recompute_limit=st.recompute_limit,
                       loop_jacobian_limit=st.loop_jacobian_limit)
    if st.mode == "reverse" and st.gather_stencils:   # adjoints gathered from their readers, not scattered
        st.sig.gather = gather.gathered_arrays(st.ir, st.activity, differentiable_arrays(st.ir, st.activity),
                                               st.sig.owned, st.launch_shape)
    if st.coarsen and coarsen.refusal(st.ir, st.activity, st.sig.owned, st.sig.gather, st.mode) is None:
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


PASSES: tuple[tuple[str, Callable[[PassState], None]], ...] = (
    ("lower", lower),
    ("record-calls", record_calls),
    ("analyze", analyze),
    ("signature", signature),
    ("extrema", extrema),
    ("generate", emit),
)


def verify_by_default() -> bool:
    return os.environ.get("HARNESS_VERIFY_IR", "") not in ("", "0")


def run_passes(st: PassState, verify_ir: bool = False, passes=PASSES) -> PassState:
    for name, run in passes:
        run(st)
        if verify_ir and st.ir is not None:
            verify(st.ir, after=name)
    return st
