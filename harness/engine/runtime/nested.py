"""Device-side autodiff and device-function calls: child compile jobs and their configuration.

A nested job must be compiled for its parent's target with its parent's configuration (the bug
of Enzyme.jl issue 2395 was a nested primal job built for the host). The engine checks this before
compiling anything; `nested_config: native` reproduces the historical failure on purpose.
"""
from __future__ import annotations

import ast

from harness.core.target import TargetConfig
from harness.core.errors import NestedCompilationError, UnsupportedError
from harness.engine.analyses.activity import extremum_atomics
from harness.engine.analyses.ownership import affine_forms, visit_guarded
from harness.engine.frontend.source import KernelSource, parse_kernel, resolve_global
from harness.engine.ir.ssa import KernelIR, Lit, Loop, Nested, Param, file_of, walk
from harness.engine.runtime.jobs import CompilerJob
from harness.engine.frontend.normalize import lower_kernel
from harness.engine.pass_state import PassState
from harness.engine.ir.types import literal_type


def uses_autodiff(src: KernelSource) -> bool:
    from harness.engine.device import autodiff
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Call):
            f = node.func
            try:
                if isinstance(f, ast.Name):
                    obj = resolve_global(src, f.id)
                elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                    obj = getattr(resolve_global(src, f.value.id), f.attr, None)
                else:
                    continue
            except KeyError:
                continue
            if obj is autodiff:
                return True
    return False


def host_config(parent: TargetConfig) -> TargetConfig:
    """The configuration a job gets when it ignores its parent: the host's defaults."""
    return TargetConfig("host", None, False, False)


def check_inherits(child: CompilerJob, parent: CompilerJob) -> None:
    if child.config != parent.config:
        c, p = child.config, parent.config
        raise NestedCompilationError(
            f"nested job {child.function} ({child.mode}) is configured for target {c.target}"
            f"{' (cc ' + '.'.join(map(str, c.compute_capability)) + ')' if c.compute_capability else ''}, "
            f"but its parent {parent.function} ({parent.mode}) is compiled for {p.target}"
            f"{' (cc ' + '.'.join(map(str, p.compute_capability)) + ')' if p.compute_capability else ''}: "
            f"a nested job must inherit its parent's target and configuration")


def record_inlined_calls(root: CompilerJob, ir: KernelIR) -> None:
    """Helpers inlined into `ir` are child jobs of their caller, in `root`'s mode and config."""
    by_name = {root.function: root}
    for callee, caller, _line in ir.calls:
        parent = by_name.get(caller, root)
        if callee not in by_name:
            by_name[callee] = parent.child(callee, root.mode, root.config)


def nested_arrays(nested: Nested, file: str) -> tuple:
    """(function name, call site, arrays) of one autodiff call in `file`, each array as (position, parameter,
    role, kernel array, differentiable), for the launch's aliasing check (engine/analyses/memory.py)."""
    params = parse_kernel(nested.function).params
    arrays = []
    for pos, (name, arg) in enumerate(zip(params, nested.args)):
        if not arg.is_array:
            continue
        diff = arg.activity != "const"
        arrays.append((pos, name, "primal", arg.value, diff))
        if arg.shadow is not None:
            arrays.append((pos, name, "shadow", arg.shadow, diff))
    return nested.function.__name__, f"{file}:{nested.line}", tuple(arrays)


def device_state(parent, call: Nested, index: int):
    """The PassState of one `autodiff` call's device function (pipeline.DEVICE_PASSES): the
    parent's seams, options and launch shape, and a child job that must inherit its parent's
    configuration (checked before anything is compiled)."""
    job = parent.job
    config = job.config if parent.options.nested_config == "inherit" else host_config(job.config)
    child = job.child(call.function.__name__, call.mode, config)
    replay = child.child(call.function.__name__, "primal", config)
    check_inherits(child, job)
    check_inherits(replay, child)
    return PassState(parse_kernel(call.function), [], [], call.mode, parent.launch_shape, child, parent.seams,
                     parent.options, declared={}, nested=call, kernel_ir=parent.ir, index=index)


def lower_device(st) -> None:
    """The called function lowered as a device function, its parameters typed by the call's
    arguments, with the caller's guards and the affine forms of its scalar arguments."""
    kernel_ir, call, src = st.kernel_ir, st.nested, st.src
    if len(src.params) != len(call.args):
        raise UnsupportedError(f"autodiff passes {len(call.args)} arguments to {src.name}, "
                               f"which takes {len(src.params)}", file=kernel_ir.file, line=call.line)
    for name, arg in zip(src.params, call.args):
        if arg.is_array:
            p = kernel_ir.param(arg.value)
            st.params.append(Param(name, "array", p.dtype, p.ndim))
        else:
            dtype = literal_type(arg.value.value) if isinstance(arg.value, Lit) else kernel_ir.types[arg.value]
            st.params.append(Param(name, "scalar", dtype))
        st.declared[name] = arg.activity
    f_ir = st.ir = lower_kernel(src, st.params, device=True)
    kernel_forms = affine_forms(kernel_ir)     # e.g. Const(i) with i = cuda.grid(1): {'gx': 1}
    sites = {}
    visit_guarded(kernel_ir, kernel_forms, lambda s, pins: sites.setdefault(id(s), pins))
    f_ir.entry_pins = sites.get(id(call), frozenset())
    f_ir.param_forms = {name: ({"1": arg.value.value} if type(arg.value.value) is int else None)
                        if isinstance(arg.value, Lit) else kernel_forms.get(arg.value)
                        for name, arg in zip(src.params, call.args) if not arg.is_array}


def refuse_extrema(st) -> None:
    for s in extremum_atomics(st.ir, st.activity):
        raise UnsupportedError(f"cuda.atomic.{s.op} on differentiable '{s.array}' in a function differentiated "
                               "on the device: its winner is found by replaying the whole grid before the "
                               "derivative runs, which a device function cannot do", file=file_of(st.ir, s), line=s.line)


def taped_loops(st) -> dict:
    """{line: file} of the dynamic loops a device-side reverse tapes: a thread running one past
    the tape's size sets the calling kernel's overflow flag, and the launch refuses the result."""
    if st.mode != "reverse":
        return {}
    return {s.line: file_of(st.ir, s) for s in walk(st.ir.body) if isinstance(s, Loop)}


def result_types(st) -> None:
    """The types of the call's results in the caller: adjoints of Active scalars (reverse) or the
    result's tangent (forward)."""
    kernel_ir, call, f_ir = st.kernel_ir, st.nested, st.ir
    if call.mode == "reverse":
        actives = [p for p in st.params if st.declared[p.name] == "active"]
        for t, p in zip(call.targets, actives):
            kernel_ir.types[t] = p.dtype
    elif call.targets and f_ir.returns:
        kernel_ir.types[call.targets[0]] = f_ir.types.get(f_ir.returns[0], "float64") \
            if isinstance(f_ir.returns[0], str) else "float64"
