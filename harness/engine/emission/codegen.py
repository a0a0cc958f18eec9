"""Emit readable numba.cuda source for the forward (tangent) and reverse (adjoint) kernels.

Forward (emit_forward.py): the primal statements, each followed by its tangent.
Reverse (emit_reverse.py): the primal replayed in registers (forward sweep), then the adjoint
statements in reverse order with control flow mirrored (reverse sweep), each by the emitter of its
statement kind (emit_adjoints.py). Every value the reverse sweep needs is still in a register from
the replay; only dynamic loops keep a small per-thread tape (emit_loops.py). An in-place update
such as `A[0] *= A[0]` reads `A[0]` into a register before it is overwritten. The primal
statements and parameter lists are emit_primal.py's; shared state (shared arrays, shuffles)
emit_parallel.py's; the end-of-kernel reduction of Active scalars emit_reduce.py's; early shadow reads emit_prefetch.py's; atomic max/min
emit_extrema.py's; uniform-index reads emit_uniform.py's; stencil adjoints gathered instead of
scattered emit_gather.py's (gather.py proves where). All of them are functions over one
explicit EmitState (emit_state.py), made here per generated function.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.engine.emission import emit_extrema, emit_forward, emit_gather, emit_primal, emit_reverse, emit_uniform
from harness.engine.emission.emit_adjoints import ADJOINT_EMITTERS, statement_kind  # noqa: F401  (re-exported: the default registry)
from harness.engine.analyses.activity import extremum_arrays
from harness.engine.emission.emit_state import EmitState, body_text
from harness.engine.ir.ssa import KernelIR
from harness.engine.rules import rng
from harness.engine.rules.libm import CBRT_PRELUDE, uses_cbrt
from harness.engine.options import EngineOptions
from harness.engine.emission.syntax import atom, expr_text, index_text, partial_text  # noqa: F401  (re-exported)

HEADER_IMPORTS = "import math\n\nfrom numba import cuda\nfrom numpy import bool_, float16, float32, float64, int8, int16, int32, int64, uint32, uint64\n"


@dataclass
class Signature:
    """What a derivative kernel is specialised for."""
    activity: dict[str, str]          # param -> activity name
    width: int = 1                    # batch width (shadows per differentiable argument)
    owned: frozenset = frozenset()    # arrays whose adjoint updates need no atomics
    exclusive: frozenset = frozenset()    # shared arrays one thread per element between barriers (ordering.interval_exclusive)
    apart: frozenset = frozenset()        # pairs of accesses one thread makes at different elements (ordering.apart_in_thread)
    skip_store: frozenset = frozenset()   # DuplicatedNoNeed arrays never read: primal not written
    gather: dict = field(default_factory=dict)   # array -> read groups whose adjoint is gathered (gather.py)
    coarsen: int = 0                  # reverse: grid axes of a block-coarsened kernel (coarsen.py); 0: not coarsened
    options: EngineOptions = field(default_factory=EngineOptions)   # the engine's options, whole (tape_size, ...)



def function_text(ir: KernelIR, mode: str, sig: Signature, varied: set[str], *, device: bool = False,
                  name: str | None = None, nested_names: dict | None = None, nested_tapes: dict | None = None,
                  extrema: list | None = None, emitters: dict | None = None,
                  rules: dict | None = None) -> tuple[str, str]:
    """(name, `def` text) of the `mode` version of `ir`: a kernel, or a device function. Modes
    'extrema1' and 'extrema2' are the passes that find the winners of atomic max/min. `emitters`
    and `rules` replace ADJOINT_EMITTERS and the derivative rules (rules.PARTIALS)."""
    em = EmitState.start(ir, sig, varied, ADJOINT_EMITTERS if emitters is None else emitters, rules)
    em.nested_names = nested_names or {}
    em.nested_tapes = nested_tapes or {}
    arrays = extremum_arrays(extrema or [])
    em.extrema = {id(s): arrays.index(s.array) for s in extrema or []}
    em.extremum_rank = {id(s): (j, len(group)) for a in arrays
                        for group in [[t for t in extrema if t.array == a]] for j, s in enumerate(group)}
    em.extremum_counted = emit_extrema.counted(ir, extrema or [])
    fname = name or f"{ir.name}__{mode}" + ("_dev" if device else "")
    if mode in ("extrema1", "extrema2"):
        return fname, emit_extrema.extremum_function(em, fname, 1 if mode == "extrema1" else 2)
    if mode == "primal":
        emit_reverse.reverse_replay(em, ir.body)
    elif mode == "forward":
        emit_extrema.count_start(em)
        emit_forward.forward(em, ir.body)
        if device and ir.returns:
            r = ir.returns[0]
            em.line(f"return {em.d(r, 0) if em.is_varied(r) else '0.0'}")
    elif mode == "reverse":
        emit_reverse.reverse_function_body(em, device, fname)
    else:
        raise ValueError(mode)
    params = emit_primal.params(em, mode) if mode != "primal" else emit_primal.primal_params(em)
    if device and mode == "reverse":
        params = [p for p in params if p != em.prefix + "active_out"]
    body = body_text(em.lines) or "    pass"
    deco = "@cuda.jit(device=True)\n" if device else ""
    text = f"{deco}def {fname}({', '.join(params)}):\n{body}\n"
    if uses_cbrt(ir):
        text = CBRT_PRELUDE + text
    text = rng.prelude(ir) + text
    if em.uniform:                        # the kernel launched after it (emit_uniform.py)
        text += "\n\n" + emit_uniform.finish_text(em, f"{fname}_finish", params)
    if mode == "reverse" and not device and em.sig.gather:   # its readers' replays and consume kernel
        text += "\n\n" + emit_gather.helpers_text(em, fname, params)
    return fname, text


def module_text(doc: str, defs: list[str]) -> str:
    return f'"""{doc}\n"""\n{HEADER_IMPORTS}\n\n' + "\n\n".join(defs)


def describe(ir: KernelIR, mode: str, sig: Signature, origin: str) -> str:
    activities = ", ".join(f"{p.name}: {sig.activity[p.name]}" for p in ir.params)
    return (f"{mode.capitalize()}-mode code of `{ir.name}` ({origin}).\n\n"
            f"Generated by the harness AD engine; do not edit. Activities: {activities}.\n"
            f"Batch width {sig.width}; thread-owned adjoints: {', '.join(sorted(sig.owned)) or 'none'}"
            + (f"; gathered adjoints: {', '.join(sig.gather)}" if sig.gather else "")
            + ("; block-coarsened." if sig.coarsen and mode == "reverse" else "."))


def generate(ir: KernelIR, mode: str, sig: Signature, varied: set[str], origin: str, **seams) -> tuple[str, str]:
    """Return (function name, module source) of the `mode` kernel of `ir` (`seams`: emitters, rules)."""
    fname, text = function_text(ir, mode, sig, varied, **seams)
    return fname, module_text(describe(ir, mode, sig, origin), [text])
