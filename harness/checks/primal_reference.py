"""Independent references for a primal launch's results.

The gradient oracles differentiate whatever the primal computes, so a front end that indexed a
lower-rank operand on the wrong axis would pass all of them. The primal run therefore compares its
results with a reference that does not go through the engine:

    broadcast / map   numpy: np.vectorize(f) over the operands, numpy's own broadcasting
    kernel            the kernel compiled by numba.cuda.jit directly and launched on fresh copies
                      (not the engine's plan; kernels that call autodiff have no such twin),
                      kept in numba's on-disk cache (`numba_twin`)

Kernels whose results depend on the order threads reach an atomic (a slot handed out by a counter)
cannot be compared launch against launch; they are skipped, saying so.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np

from harness import policy
from harness.problems.layouts import device_view
from harness.model import OracleVerdict
from harness.oracles.arrays import f64
from harness.oracles.names import array_entry_names
from harness.oracles.tolerance import Tolerance, compare_vectors

PRIMAL_REFERENCE = "primal-reference"


def _tolerance(dtype: str) -> Tolerance:
    rtol, atol = policy.PRIMAL_REFERENCE_RTOL_ATOL[dtype]
    return Tolerance(rtol, atol)


def _same_non_finite(g, r):
    """A NaN both results hold, or the same infinity, is agreement: the kernel computes it (cuxfilter
    stores cp.nan between its curves). Those entries compare as zeros; any other NaN or Inf stays
    infinitely bad, as in every comparison."""
    from harness.oracles.arrays import xp_of
    xp = xp_of(g, r)
    same = (xp.isnan(g) & xp.isnan(r)) | (xp.isinf(g) & (g == r))
    if not bool(same.any()):
        return g, r
    return xp.where(same, 0.0, g), xp.where(same, 0.0, r)


def _compare(what: str, got: dict, ref: dict, dtype: str) -> OracleVerdict:
    tol = _tolerance(dtype)
    parts = []
    for name, r in ref.items():
        g = f64(got[name])                             # numpy, or the device's arrays where they are
        g, r = _same_non_finite(g, f64(r))
        names = array_entry_names(name, g.shape)       # built only for the entries reported
        parts.append(compare_vectors(g, r, tol, names, label=name))
    from harness.oracles.tolerance import Comparison
    comp = Comparison.concat(parts)
    metrics = {**comp.metrics(), "rtol": tol.rtol, "atol": tol.atol, "reference": what}
    if comp.ok:
        return OracleVerdict(PRIMAL_REFERENCE, "pass", f"primal results agree with {what} "
                             f"({', '.join(ref)}; max |err| {comp.max_abs_err:.3g})", metrics, comp.worst())
    i = comp.worst_index()
    return OracleVerdict(PRIMAL_REFERENCE, "fail",
                         f"primal result differs from {what} at {comp.names[i]}: engine {float(comp.ad[i]):.6g}, "
                         f"reference {float(comp.ref[i]):.6g}; {comp.n_bad} of {comp.n} entries outside tolerance",
                         metrics, comp.worst(only_bad=True))


# ----------------------------------------------------------------------------- broadcast / map

def numpy_reference(f, args) -> np.ndarray:
    """f applied elementwise with numpy broadcasting over the operands (args[1:]) into args[0]'s
    shape, evaluated by plain Python in float64."""
    dest = args[0].value
    operands = []
    for a in args[1:]:
        v = a.value
        if a.spec.kind == "array":
            v = np.asarray(v, dtype=np.float64) if np.issubdtype(v.dtype, np.floating) else np.asarray(v)
        operands.append(v)
    arrays = [i for i, a in enumerate(args[1:]) if a.spec.kind == "array"]

    def scalar_f(*xs):
        full = list(operands)
        for i, x in zip(arrays, xs):
            full[i] = x
        return f(*full)
    if not arrays:
        return np.full(dest.shape, float(f(*operands)))
    value = np.vectorize(scalar_f, otypes=[np.float64])(*[operands[i] for i in arrays])
    return np.broadcast_to(value, dest.shape)


def elementwise_verdict(f, args, dest_final, dtype: str) -> OracleVerdict:
    name = args[0].spec.name
    try:
        ref = numpy_reference(f, args)
    except Exception as exc:                       # f cannot run as plain Python: say so, do not fail
        return OracleVerdict(PRIMAL_REFERENCE, "skip", f"f does not evaluate under numpy: "
                             f"{type(exc).__name__}: {exc}")
    return _compare("numpy (np.vectorize of f with numpy broadcasting)", {name: dest_final}, {name: ref}, dtype)


# ----------------------------------------------------------------------------- kernels

def _order_dependent(fn) -> str | None:
    """The line of an atomic whose returned value the kernel uses (its results then depend on the
    order threads reach it), or of an autodiff call (no numba twin); None otherwise."""
    fn = getattr(fn, "py_func", fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return "its source is not available"
    offset = fn.__code__.co_firstlineno - 1
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "atomic":
                return f"line {node.lineno + offset} uses the value an atomic returns (thread-order dependent)"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "autodiff":
            return f"line {node.lineno + offset} calls autodiff (only the engine can launch it)"
    return None


# process-wide: numba compiles a kernel once per process; keyed by the kernel, holding no session's results
_TWINS: dict = {}


def numba_twin(kernel):
    """(numba.cuda.jit of the kernel, the function it compiles), one per kernel in a process.

    The function is the kernel in a copy of its module written to the generated folder (content
    addressed, like the rel-active variant's), so numba can keep the compiled twin in its on-disk
    cache (cache=True) without sharing an index with the engine's own compile of the kernel, which
    uses other options under the same key (numba's cache index does not tell options apart): a
    warm suite loads the twin instead of compiling it again in every primal run. Where the copy
    cannot be made or imported, the kernel itself is compiled, uncached."""
    from numba import cuda
    fn = getattr(kernel, "py_func", kernel)
    if fn not in _TWINS:
        try:
            from pathlib import Path

            from harness.engine.runtime.cache import load_function, write_module
            source = Path(fn.__code__.co_filename).read_text(encoding="utf-8")
            copy = load_function(write_module(f"{fn.__name__}__numba_twin", source), fn.__name__)
            _TWINS[fn] = (cuda.jit(getattr(copy, "py_func", copy), cache=True), copy)
        except Exception:                          # noqa: BLE001 - the uncached twin always works
            _TWINS[fn] = (cuda.jit(fn), fn)
    direct, twin = _TWINS[fn]
    return direct, getattr(twin, "py_func", twin)


def direct_launch_verdict(kernel, config, args, engine_finals: dict, backend, dtype: str,
                          on_host: bool = False, only: set | None = None, fresh: list | None = None) -> OracleVerdict:
    """The kernel compiled by numba.cuda.jit itself, launched on fresh copies, against the engine's
    primal launch: every array argument's final values (those named in `only`, when given).
    `on_host`: the copies are host arrays, staged around the launch (harness/problems/host_staging.py), as
    the engine's were. `fresh`: the copies, already made (else made here from `args`)."""
    why = _order_dependent(kernel)
    if why:
        return OracleVerdict(PRIMAL_REFERENCE, "skip", f"no direct numba reference: {why}")
    from harness.problems.host_staging import HOST, Staged
    roots: dict = {}
    values = fresh if fresh is not None else \
        [device_view(HOST if on_host else backend, a.value, roots) if a.spec.kind == "array" else a.value for a in args]
    staged = Staged(backend) if on_host else None
    try:
        direct, fn = numba_twin(kernel)
        from contextlib import nullcontext

        from harness.backends.compile_lock import compiling
        # typed and compiled (or loaded from disk) at the launch: one worker at a time on a GPU
        launch_values = [staged.value(v) for v in values] if staged else values
        try:
            with compiling(fn) if backend.name == "cuda" else nullcontext():
                backend.launch(direct, config.grid, config.block, launch_values)
        except Exception:                          # noqa: BLE001 - the cached copy failed: the kernel itself
            if fn is getattr(kernel, "py_func", kernel):
                raise
            from numba import cuda
            backend.launch(cuda.jit(getattr(kernel, "py_func", kernel)), config.grid, config.block, launch_values)
        backend.synchronize()
        if staged:
            staged.copy_back()
    except Exception as exc:                       # numba alone cannot build it (e.g. plain helpers)
        return OracleVerdict(PRIMAL_REFERENCE, "skip", f"numba.cuda.jit alone cannot launch the kernel: "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    ref = {a.spec.name: v for a, v in zip(args, values) if a.spec.kind == "array"
           and np.issubdtype(np.dtype(v.dtype), np.number)      # compared where they are (device or host)
           and (only is None or a.spec.name in only)}
    got = {n: engine_finals[n] for n in ref}
    return _compare("the kernel launched directly through numba.cuda.jit", got, ref, dtype)


# ----------------------------------------------------------------------------- before a derivative

PRIMAL_DIFFERS = "the primal differs from numba's"
NOT_JUDGED = "so no derivative is judged"     # what a run whose primal is not the kernel's says


def primal_first_verdict(kernel, config, problem, engine_finals: dict, backend, dtype: str) -> OracleVerdict:
    """A derivative run's first check: the engine's primal launch (`engine_finals`, its
    differentiable arrays) against the kernel launched through numba itself, on fresh copies
    where `problem` (a KernelProblem) keeps its states. Every gradient oracle differentiates the
    engine's primal, so when that primal is not the kernel's, a derivative cannot be blamed for
    what the oracles see: the verdict says so first."""
    verdict = direct_launch_verdict(kernel, config, problem.args, engine_finals, backend, dtype,
                                    on_host=problem.on_host, only=set(engine_finals), fresh=problem.fresh_values())
    if verdict.verdict == "fail":
        verdict.message = f"{PRIMAL_DIFFERS}, {NOT_JUDGED}: {verdict.message}"
    return verdict
