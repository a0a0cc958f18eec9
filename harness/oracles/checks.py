"""The gradient oracles: each compares an engine derivative with an independent reference and returns
an `OracleVerdict` (docs/oracles.md says why each rule is
the way it is).

    check_forward_fd   J v (forward mode)                    vs  finite differences of F along v
    check_reverse_fd   <J^T w, v> (reverse mode)              vs  <w, J v> by finite differences
    check_dot          <J_rev^T w, v>                         vs  <w, J_fwd v>   (no FD noise)
    check_zero         all-zero or NaN/Inf gradient where finite differences are not: the ZERO state
    localize           full Jacobian by FD vs by AD (small states only), worst entries
    run_gradient_oracles  all of the above for one mode, with the FD refinements before a failure
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from harness.core.errors import UnsupportedError
from harness.model import OracleVerdict, WorstEntry
from harness.oracles.fd import (
    argument_steps, base_state, central_difference, copy_values, halved, largest_step,
    make_cotangent, make_directions, relative_steps, step_size,
)
from harness.oracles.arrays import all_finite, any_nonzero, f64, finite_max_abs, first_true, xp_of, xp_of_problem
from harness.oracles.names import Names
from harness.oracles.problem import DiffProblem, StateVar, entry_names, flatten, unflatten
from harness.oracles.tolerance import (
    MAX_WORST, Comparisons, Tolerance, compare_dots, compare_in_pieces, compare_vectors, dot_scale, dot_tolerance, resolve_tolerance,
)

FD_FORWARD, FD_REVERSE, DOT, ZERO = "fd-forward", "fd-reverse", "dot", "zero"
ZERO_MESSAGE = "gradient is all zero where finite differences are not"
ZERO_ARG_MESSAGE = "gradient is zero with respect to"
NONFINITE_MESSAGE = "gradient contains NaN/Inf at"

Values = Mapping[str, np.ndarray]


# ----------------------------------------------------------------------------- flat-state helpers

def _size(var: StateVar) -> int:
    return int(np.prod(var.shape)) if var.shape else 1


def _flat(vars_: list[StateVar], values: Values | np.ndarray, what: str) -> np.ndarray:
    """Flatten in state order. A missing name counts as zeros (an engine may omit a shadow it never
    touched); a wrong size is an error, since silently reshaping would misalign every later entry."""
    if not isinstance(values, Mapping):
        flat = f64(values).reshape(-1)
        expected = sum(_size(v) for v in vars_)
        if flat.size != expected:
            raise ValueError(f"{what}: got {flat.size} values, the state has {expected}")
        return flat
    xp = xp_of(*values.values())
    parts = _parts(vars_, values, what)     # a mapping: one checked array per variable
    return xp.concatenate(parts) if parts else xp.zeros(0)


def _blocks(vars_: list[StateVar]) -> list[tuple[int, int]]:
    out, at = [], 0
    for v in vars_:
        out.append((at, at + _size(v)))
        at += _size(v)
    return out


def _parts(vars_: list[StateVar], values: Values | np.ndarray, what: str) -> list:
    """The state's values as one 1-d array per variable, in state order, without concatenating:
    views of `values` (zeros for a name it omits), checked as _flat checks them."""
    if not isinstance(values, Mapping):
        flat = _flat(vars_, values, what)
        return [flat[a:b] for a, b in _blocks(vars_)]
    xp = xp_of(*values.values())
    out = []
    for v in vars_:
        n = _size(v)
        if values.get(v.name) is None:
            out.append(xp.zeros(n))
            continue
        a = f64(values[v.name], xp).reshape(-1)
        if a.size != n:
            raise ValueError(f"{what}: {v.name} has {a.size} values, expected {n} (shape {v.shape})")
        out.append(a)
    return out


def _dot(x: list, y: list) -> float:
    """<x, y> over a state held in parts (one scalar per part comes to the host)."""
    return sum((float(a @ b) for a, b in zip(x, y)), 0.0)


def _norm(x: list) -> float:
    return math.sqrt(_dot(x, x))


def _scale(x: list, y: list) -> float:
    """dot_scale over parts: |x| |y| / sqrt(n)."""
    n = max(sum(int(a.size) for a in x), 1)
    return _norm(x) * _norm(y) / math.sqrt(n)


def _first_nonfinite(parts: list) -> int | None:
    """The flat index of the first NaN/Inf entry of a state held in parts; None when all are finite."""
    at = 0
    for a in parts:
        if not all_finite(a):
            return at + first_true(~xp_of(a).isfinite(a))
        at += int(a.size)
    return None


def _vars_of(values: Values) -> list[StateVar]:
    return [StateVar(k, tuple(getattr(v, "shape", ()))) for k, v in values.items()]


def _seed(problem: DiffProblem, values: Values) -> Values:
    """What a derivative launch is given: a copy (an engine writes shadows in place), unless the
    problem says it never writes its seeds (`writes_seeds = False`: KernelProblem builds its
    shadows from them), which saves a state-sized copy per launch."""
    return values if getattr(problem, "writes_seeds", True) is False else copy_values(values)


def _ad_jvp_values(problem: DiffProblem, v: Values) -> Values:
    return problem.jvp(_seed(problem, v))


def _ad_vjp_values(problem: DiffProblem, w: Values) -> Values:
    return problem.vjp(_seed(problem, w))


def _ad_jvp(problem: DiffProblem, v: Values) -> np.ndarray:
    return _flat(problem.outputs, _ad_jvp_values(problem, v), "jvp result")


def _ad_vjp(problem: DiffProblem, w: Values) -> np.ndarray:
    return _flat(problem.inputs, _ad_vjp_values(problem, w), "vjp result")


def _skip_reason(problem: DiffProblem) -> str | None:
    if not problem.inputs:
        return "no differentiable inputs (every argument is const): nothing to differentiate"
    if not problem.outputs:
        return "no differentiable outputs: the launch's derivative is empty"
    return None


def _available(problem: DiffProblem, method: str) -> bool:
    return callable(getattr(problem, method, None))


def _g(x: float) -> str:
    return f"{float(x):.6g}"      # float(): a device scalar comes to the host as one number


def _e(x: float) -> str:
    return f"{float(x):.3g}"


# ----------------------------------------------------------------------------- the FD checks

def _fd_nonfinite_verdict(name: str, i: int, names: list[str], label: str) -> OracleVerdict:
    return OracleVerdict(name, "fail",
                         f"finite-difference reference is not finite at {names[i]} ({label}): the primal is "
                         f"not finite near the base point, so FD cannot judge the gradient",
                         {"fd_nonfinite": True})


def check_forward_fd(problem: DiffProblem, directions: Sequence[Values], fd_results: Sequence[Values],
                     rtol: float | None = None, atol: float | None = None, *,
                     ad_results: Sequence[Values | np.ndarray] | None = None) -> OracleVerdict:
    """J v from problem.jvp against the FD estimate of J v, entry by entry, for every direction.
    `ad_results` (J v per direction) skips the jvp launches when the caller already has them."""
    reason = _skip_reason(problem)
    if reason:
        return OracleVerdict(FD_FORWARD, "skip", reason)
    tol = resolve_tolerance(problem.dtype, rtol, atol)
    names, blocks = entry_names(problem.outputs), _blocks(problem.outputs)
    # Direction by direction (each direction's blocks keep their own noise floor), reported as one
    # comparison over every direction: only one direction's arrays are alive at a time, and
    # `fd_results` may compute each estimate when it is read (the workspace's lazy estimates).
    comp = Comparisons()
    for i, v in enumerate(directions):
        ref = _parts(problem.outputs, fd_results[i], "finite differences")
        bad = _first_nonfinite(ref)
        if bad is not None:
            return _fd_nonfinite_verdict(FD_FORWARD, bad, names, f"direction {i}")
        ad = _parts(problem.outputs, _ad_jvp_values(problem, v) if ad_results is None else ad_results[i], "jvp result")
        for (a, b), ad_part, ref_part in zip(blocks, ad, ref):
            compare_in_pieces(ad_part, ref_part, tol, names.window(a, b - a), label=f"direction {i}", into=comp)
        del ad, ref
    metrics = {**comp.metrics(), "directions": len(directions), "rtol": tol.rtol, "atol": tol.atol}
    if comp.ok:
        message = (f"J v agrees with finite differences in {len(directions)} direction(s) "
                   f"(max |err| {_e(comp.max_abs_err)}, worst err/tol {_e(comp.worst_ratio)})")
        return OracleVerdict(FD_FORWARD, "pass", message, metrics, comp.worst())
    t = comp.top
    message = (f"J v differs from finite differences at {t.name} ({t.label}): "
               f"AD {_g(t.ad)} vs FD {_g(t.ref)}, |err| {_e(t.err)} > tol {_e(t.tol)}; "
               f"{comp.n_bad} of {comp.n} entries outside tolerance")
    return OracleVerdict(FD_FORWARD, "fail", message, metrics, comp.worst(only_bad=True))


def _per_direction(x, k: int) -> list:
    """One cotangent (or one J^T w) for all k directions, or a sequence with one per direction."""
    if x is None or isinstance(x, Mapping) or hasattr(x, "shape"):      # one dict or one array (any module)
        return [x] * k
    if len(x) != k:
        raise ValueError(f"got {len(x)} cotangents / gradients for {k} directions")
    return list(x)


def _vjps(problem: DiffProblem, cotangents: list, gradients: list) -> Sequence:
    """J^T w per direction, in parts (_parts) when read, launching vjp once per distinct cotangent
    object not already given."""
    done: dict[int, np.ndarray] = {}

    def get(i: int) -> list:
        if gradients[i] is not None:
            return _parts(problem.inputs, gradients[i], "vjp result")
        w = cotangents[i]
        if id(w) not in done:
            done[id(w)] = _parts(problem.inputs, _ad_vjp_values(problem, w), "vjp result")
        return done[id(w)]
    return _Lazy(len(cotangents), get)


def _reverse_dots(problem: DiffProblem, fd_results: Sequence[Values], cotangents: Sequence[Values]) -> list[float]:
    return [_dot(_parts(problem.outputs, w, "cotangent"), _parts(problem.outputs, jv, "finite differences"))
            for w, jv in zip(cotangents, fd_results)]


def check_reverse_fd(problem: DiffProblem, directions: Sequence[Values], fd_results: Sequence[Values],
                     cotangent: Values | Sequence[Values], rtol: float | None = None, atol: float | None = None,
                     *, ad_gradient: Values | np.ndarray | Sequence | None = None) -> OracleVerdict:
    """<J^T w, v> with J^T w = problem.vjp(w) against <w, J v>_fd, one scalar per direction.
    `cotangent` is one w for every direction or a list with one per direction (then a cotangent
    that happens to be small where the bug is cannot hide it in every direction). `ad_gradient`
    (J^T w, likewise one or per direction) skips the vjp launches when the caller has them."""
    reason = _skip_reason(problem)
    if reason:
        return OracleVerdict(FD_REVERSE, "skip", reason)
    tol = resolve_tolerance(problem.dtype, rtol, atol)
    cotangents = _per_direction(cotangent, len(directions))
    grads = _vjps(problem, cotangents, _per_direction(ad_gradient, len(directions)))
    ad, ref, weights, scales = [], [], [], []
    for i, v in enumerate(directions):
        w, g = _parts(problem.outputs, cotangents[i], "cotangent"), grads[i]
        vf = _parts(problem.inputs, v, "direction")
        jv = _parts(problem.outputs, fd_results[i], "finite differences")
        bad = _first_nonfinite(jv)
        if bad is not None:
            return _fd_nonfinite_verdict(FD_REVERSE, bad, entry_names(problem.outputs), f"direction {i}")
        ad.append(_dot(g, vf))
        ref.append(_dot(w, jv))
        weights.append(_norm(vf))          # the AD error in g is dotted with v
        # The larger of the two sides' natural scales: the FD side cannot be inflated by a wrong
        # gradient, the AD side models the AD vector's own roundoff.
        scales.append(max(_scale(g, vf), _scale(w, jv)))
    comp = compare_dots(ad, ref, weight_norms=weights, scales=scales, tol=tol,
                        names=[f"dir {i}" for i in range(len(directions))])
    metrics = {**comp.metrics(), "directions": len(directions), "rtol": tol.rtol, "atol": tol.atol}
    if comp.ok:
        message = (f"<J^T w, v> agrees with <w, J v> by finite differences in {len(directions)} direction(s) "
                   f"(worst err/tol {_e(comp.worst_ratio)})")
        return OracleVerdict(FD_REVERSE, "pass", message, metrics, comp.worst())
    i = comp.worst_index()
    message = (f"<J^T w, v> differs from <w, J v> by finite differences in {comp.names[i]}: "
               f"AD {_g(comp.ad[i])} vs FD {_g(comp.ref[i])}, |err| {_e(comp.err[i])} > tol {_e(comp.tol[i])}; "
               f"{comp.n_bad} of {comp.n} directions outside tolerance")
    k = next((k for k in map(_first_nonfinite, grads) if k is not None), None)
    if k is not None:
        message += f"; J^T w is not finite at {entry_names(problem.inputs)[k]}"
    return OracleVerdict(FD_REVERSE, "fail", message, metrics, comp.worst(only_bad=True))


# ----------------------------------------------------------------------------- forward vs reverse

def check_dot(problem: DiffProblem, directions: Sequence[Values], cotangent: Values | Sequence[Values],
              rtol: float | None = None, atol: float | None = None, *,
              ad_results: Sequence[Values | np.ndarray] | None = None,
              ad_gradient: Values | np.ndarray | Sequence | None = None) -> OracleVerdict:
    """<w, J_fwd v> against <J_rev^T w, v>: both from the engine, so no FD noise enters; what is left
    is the roundoff of two differently ordered computations of the same sum. `cotangent` and
    `ad_gradient` are one for all directions or one per direction, as in check_reverse_fd."""
    reason = _skip_reason(problem)
    if reason:
        return OracleVerdict(DOT, "skip", reason)
    tol = resolve_tolerance(problem.dtype, rtol, atol)
    cotangents = _per_direction(cotangent, len(directions))
    grads = _vjps(problem, cotangents, _per_direction(ad_gradient, len(directions)))
    rev, fwd, weights, scales = [], [], [], []
    for i, v in enumerate(directions):
        w, g = _parts(problem.outputs, cotangents[i], "cotangent"), grads[i]
        vf = _parts(problem.inputs, v, "direction")
        jv = _parts(problem.outputs, _ad_jvp_values(problem, v) if ad_results is None else ad_results[i], "jvp result")
        fwd.append(_dot(w, jv))
        rev.append(_dot(g, vf))
        weights.append(_norm(w) + _norm(vf))   # both sides carry AD error
        scales.append(max(_scale(w, jv), _scale(g, vf)))
    comp = compare_dots(rev, fwd, weight_norms=weights, scales=scales, tol=tol,
                        names=[f"dir {i}" for i in range(len(directions))])
    metrics = {**comp.metrics(), "directions": len(directions), "rtol": tol.rtol, "atol": tol.atol}
    if comp.ok:
        message = (f"forward and reverse agree: <w, J_fwd v> = <J_rev^T w, v> in {len(directions)} direction(s) "
                   f"(worst err/tol {_e(comp.worst_ratio)})")
        return OracleVerdict(DOT, "pass", message, metrics, comp.worst())
    i = comp.worst_index()
    message = (f"forward and reverse disagree in {comp.names[i]}: <w, J_fwd v> = {_g(comp.ref[i])} but "
               f"<J_rev^T w, v> = {_g(comp.ad[i])}, |err| {_e(comp.err[i])} > tol {_e(comp.tol[i])}; "
               f"{comp.n_bad} of {comp.n} directions outside tolerance")
    return OracleVerdict(DOT, "fail", message, metrics, comp.worst(only_bad=True))


# ----------------------------------------------------------------------------- the zero guard

def _zero_names(vectors: Sequence[Values | np.ndarray], names: Sequence[str] | None) -> Names:
    """The entries' names, each built only when a verdict reports it."""
    if names is not None:
        return Names.of(names)
    first = vectors[0]
    if isinstance(first, Mapping):
        return entry_names(_vars_of(first))
    return Names([(int(np.size(first)), lambda i: f"[{i}]")])


def _parts_any(x: Values | np.ndarray) -> list:
    """A vector as 1-d parts: a dict's values in its order, or one array."""
    if isinstance(x, Mapping):
        xp = xp_of(*x.values())
        return [f64(v, xp).reshape(-1) for v in x.values()]
    return [f64(x).reshape(-1)]


def _lined_up(a: list, f: list) -> tuple[list, list]:
    """AD and FD parts that line up entry by entry: as they are when they split alike, else each
    concatenated into one."""
    if [p.size for p in a] == [p.size for p in f]:
        return a, f
    join = lambda parts: [xp_of(*parts).concatenate(parts)] if parts else parts   # noqa: E731
    return join(a), join(f)


def check_zero(ad_vectors: Sequence[Values | np.ndarray], fd_vectors: Sequence[Values | np.ndarray], *,
               rtol: float = 0.0, atol: float = 0.0, names: list[str] | None = None,
               aligned: bool | None = None) -> OracleVerdict:
    """The zero guard. Fails (1) when some AD entry is NaN/Inf where the FD reference is finite, or
    (2) when every AD vector is identically zero while the FD reference is clearly nonzero: some FD
    entry would fail the vector rule against an AD value of 0 (with rtol = atol = 0: any nonzero).

    In forward mode AD and FD vectors line up entry by entry (`aligned`, inferred from the shapes when
    None); in reverse mode the caller passes the J^T w vectors as AD and the scalars <w, J v>_fd as
    one FD vector, with aligned=False."""
    if not ad_vectors:
        return OracleVerdict(ZERO, "skip", "no gradient to guard")
    entry = _zero_names(ad_vectors, names)
    if aligned is None:
        aligned = len(fd_vectors) == len(ad_vectors) and \
            all(_entries(f) == _entries(a) for f, a in zip(fd_vectors, ad_vectors))
    # One vector at a time (FD vectors may be computed when read): summaries, never a concatenation.
    fd_stats = _FdStats()
    if not aligned:
        for f in fd_vectors:
            for part in _parts_any(f):
                fd_stats.add(part)
    max_ad, all_zero, nonfinite = 0.0, True, None
    for i, a_vector in enumerate(ad_vectors):
        a_parts = _parts_any(a_vector)
        f_parts = [None] * len(a_parts)
        if aligned:
            a_parts, f_parts = _lined_up(a_parts, _parts_any(fd_vectors[i]))
        at, count, first = 0, 0, None
        for a, f in zip(a_parts, f_parts):
            xp = xp_of(a)
            bad = ~xp.isfinite(a)
            if f is not None:
                fd_stats.add(f)
                # A NaN that the primal itself produces is not an AD bug: only flag where FD is finite.
                bad &= xp.isfinite(f)
            n_bad = int(bad.sum())
            if n_bad and first is None:
                k = first_true(bad)
                first = (at + k, float(a[k]))
            count += n_bad
            at += int(a.size)
            max_ad = max(max_ad, finite_max_abs(a))
            all_zero = all_zero and not bool(a.any())
        if nonfinite is None and count and (aligned or fd_stats.all_finite):
            nonfinite = (i, entry[first[0]], first[1], count)
    metrics = {"max_abs_ad": max_ad, "max_abs_fd": fd_stats.max_abs}
    if nonfinite is not None:
        i, name, value, count = nonfinite
        where = f" (direction {i})" if len(ad_vectors) > 1 else ""
        return OracleVerdict(ZERO, "fail",
                             f"{NONFINITE_MESSAGE} {name}{where}: AD {value} where finite differences "
                             f"are finite; {count} non-finite entries", {**metrics, "nonfinite": count})
    if all_zero:
        # Would some finite FD value fail the vector rule against AD = 0, with the rms over all FD
        # values together? |fd| - rtol |fd| grows with |fd|, so the largest |fd| decides.
        top, rms = fd_stats.max_abs, fd_stats.rms
        if not top <= atol + rtol * (top + rms):
            return OracleVerdict(ZERO, "fail", f"{ZERO_MESSAGE} (max |FD| = {top:.6g})", metrics)
        return OracleVerdict(ZERO, "pass", "gradient and finite differences are both zero within tolerance",
                             metrics)
    return OracleVerdict(ZERO, "pass", "gradient is neither all zero nor NaN/Inf", metrics)


class _FdStats:
    """What the zero guard needs of the FD vectors, gathered one vector at a time."""

    def __init__(self):
        self.all_finite, self.max_abs, self._squares, self._count = True, 0.0, 0.0, 0

    def add(self, f) -> None:
        xp = xp_of(f)
        finite = xp.isfinite(f)
        count = int(xp.count_nonzero(finite))
        self.all_finite = self.all_finite and count == f.size
        if count:
            kept = f[finite] if count < f.size else f
            self.max_abs = max(self.max_abs, float(xp.abs(kept).max()))
            self._squares += float((kept * kept).sum())
            self._count += count

    @property
    def rms(self) -> float:
        return math.sqrt(self._squares / self._count) if self._count else 0.0


def _entries(x) -> int:
    if isinstance(x, Mapping):
        return sum(int(getattr(v, "size", 1)) for v in x.values())
    return int(getattr(x, "size", np.size(x)))


# ----------------------------------------------------------------------------- the zero guard, per argument

def _trivial(ad: np.ndarray, candidates: list[tuple[str, np.ndarray]], dtype: str) -> tuple[str, np.ndarray] | None:
    """The first candidate ('zero' or 'pass-through') that `ad` equals up to a few ulps of the
    engine's dtype: what a derivative rule that returned 0 leaves behind."""
    eps = float(np.finfo(np.float32 if dtype == "float32" else np.float64).eps)
    xp = xp_of(ad)
    for kind, value in candidates:
        if bool((xp.abs(ad - value) <= 8 * eps * xp.abs(value)).all()):
            return kind, value
    return None


def _zero_per_argument(ws: _Workspace, mode: str, k: int, tol: Tolerance,
                       fd_verdict: OracleVerdict) -> OracleVerdict | None:
    """After a failed FD check: is the derivative with respect to some input argument silently zero?

    For input argument j, restrict each of the first k directions to j (v_j) and look at what AD
    gives for it: in forward mode J v_j (one jvp), in reverse mode the j block of J^T w (already
    computed). It is trivial when it is all zero, or only the identity pass-through of an array the
    kernel does not write (J v_j = v_j on j itself; (J^T w)_j = w_j), which is what a zero rule
    leaves: the whole-state guard cannot see it, since the pass-through is nonzero. Finite
    differences along v_j (two primal launches a direction) then decide: if they differ from that
    trivial value beyond the FD check's tolerance in some direction, the argument's derivative is a
    silent zero and the run is ZERO. Runs only when the FD check has failed; returns None when no
    argument qualifies."""
    problem = ws.problem
    outputs = {o.name for o in problem.outputs}
    names, blocks = entry_names(problem.outputs), _blocks(problem.outputs)
    count = min(k, len(ws.directions))
    flagged: dict[str, dict] = {}
    for var in problem.inputs:
        kinds, ratio, fd_max = set(), 0.0, 0.0
        for i in range(count):
            xp = xp_of(*ws.directions[i].values())
            vj = {p.name: f64(ws.directions[i][p.name], xp) if p.name == var.name
                  else xp.zeros(p.shape) for p in problem.inputs}     # a whole state: jvp is given one
            if not any_nonzero(vj[var.name]):
                continue
            fd_flat = _flat(problem.outputs, central_difference(problem, ws.base, vj, step_size(ws.base, vj)),
                            "finite differences")
            if not all_finite(fd_flat):
                break
            if mode == "forward":
                ad = _ad_jvp(problem, vj)
                through = _flat(problem.outputs, {var.name: vj[var.name]} if var.name in outputs else {}, "v")
                hit = _trivial(ad, [("zero", xp.zeros_like(ad)), ("pass-through", through)], problem.dtype)
                if hit is None:
                    break
                comp = compare_in_pieces(hit[1], fd_flat, tol, names, blocks=blocks, into=Comparisons())
                ratio, fd_max = max(ratio, comp.worst_ratio), max(fd_max, float(abs(fd_flat - hit[1]).max()))
            else:
                g = _flat([var], ws.vjp(i), "vjp result")
                w = ws.cotangents[i]
                cands = [("zero", xp.zeros_like(g))]
                if var.name in outputs:
                    w_j = f64(w[var.name], xp).reshape(-1)
                    cands.append(("pass-through", w_j.astype(problem.dtype).astype(np.float64)))
                hit = _trivial(g, cands, problem.dtype)
                if hit is None:
                    break
                v_flat = vj[var.name].reshape(-1)
                w_flat = _flat(problem.outputs, w, "cotangent")
                ad_dot, ref_dot = float(hit[1] @ v_flat), float(w_flat @ fd_flat)
                scale = max(dot_scale(g, v_flat), dot_scale(w_flat, fd_flat))
                t = dot_tolerance(ad_dot, ref_dot, weight_norm=float(np.linalg.norm(v_flat)), scale=scale, tol=tol)
                ratio, fd_max = max(ratio, abs(ad_dot - ref_dot) / t), max(fd_max, abs(ad_dot - ref_dot))
            kinds.add(hit[0])
        else:
            if kinds and ratio > 1.0:
                flagged[var.name] = {"kind": "pass-through" if "pass-through" in kinds else "zero",
                                     "worst_ratio": ratio, "max_abs_diff": fd_max}
    if not flagged:
        return None
    described = []
    for name, info in flagged.items():
        described.append(f"{name} (AD {'carries only its identity pass-through' if info['kind'] == 'pass-through' else 'is all zero'}, "
                         f"FD differs by up to {_g(info['max_abs_diff'])})")
    message = f"{ZERO_ARG_MESSAGE} {', '.join(flagged)} where finite differences are not: {'; '.join(described)}"
    for w in fd_verdict.worst:               # the localization's evidence, when it ran
        if " / " in w.index and any(w.index.split(" / ")[1].split("[")[0] == n for n in flagged):
            message += f"; worst entry {w.index}: AD {_g(w.ad)} vs FD {_g(w.fd)}"
            break
    return OracleVerdict(ZERO, "fail", message, {"zero_arguments": list(flagged), "per_argument": flagged})


# ----------------------------------------------------------------------------- localization

def _localization_blocker(problem: DiffProblem, max_size: int, max_columns: int) -> str | None:
    n_in, n_out = sum(map(_size, problem.inputs)), sum(map(_size, problem.outputs))
    if not n_in or not n_out:
        return "empty state"
    if n_in * n_out > max_size:
        return f"{n_out} x {n_in} Jacobian exceeds max_size {max_size}"
    if n_in > max_columns:
        return f"{n_in} FD columns exceed max_columns {max_columns}"
    return None


def _fd_jacobian(problem: DiffProblem, base: Values) -> np.ndarray:
    """Column j = central difference along e_j with h = eps^(1/3) max(1, |s0_j|): 2 launches a column."""
    n_in = sum(map(_size, problem.inputs))
    s0 = _flat(problem.inputs, base, "base point")
    xp = xp_of(s0)
    cols = []
    for j in range(n_in):
        e = xp.zeros(n_in)
        e[j] = 1.0
        h = relative_steps(problem)[0] * max(1.0, abs(float(s0[j])))
        cols.append(_flat(problem.outputs, central_difference(problem, base, unflatten(problem.inputs, e), h),
                          "finite differences"))
    return xp.stack(cols, axis=1)


def _ad_jacobian(problem: DiffProblem, mode: str) -> np.ndarray:
    """Forward: columns J e_j through jvp. Reverse: rows e_i^T J through vjp, so a reverse-mode bug
    is localized in the reverse derivative itself."""
    n_in, n_out = sum(map(_size, problem.inputs)), sum(map(_size, problem.outputs))
    xp = xp_of_problem(problem)
    if mode == "forward":
        cols = []
        for j in range(n_in):
            e = xp.zeros(n_in)
            e[j] = 1.0
            cols.append(_ad_jvp(problem, unflatten(problem.inputs, e)))
        return xp.stack(cols, axis=1)
    rows = []
    for i in range(n_out):
        e = xp.zeros(n_out)
        e[i] = 1.0
        rows.append(_ad_vjp(problem, unflatten(problem.outputs, e)))
    return xp.stack(rows, axis=0)


def _compare_jacobians(problem: DiffProblem, fd_j: np.ndarray, ad_j: np.ndarray, tol: Tolerance,
                       limit: int) -> list[WorstEntry]:
    outs, ins = entry_names(problem.outputs), entry_names(problem.inputs)
    names = [f"{o} / {i}" for o in outs for i in ins]      # row-major, like ravel()
    return compare_vectors(ad_j.ravel(), fd_j.ravel(), tol, names).worst(limit, only_bad=True)


def localize(problem: DiffProblem, max_size: int = 4096, *, mode: str = "forward",
             rtol: float | None = None, atol: float | None = None, max_columns: int = 1024,
             limit: int = MAX_WORST, base: Values | None = None) -> list[WorstEntry]:
    """Full Jacobian by FD (column by column) against the AD Jacobian (jvp columns for mode
    'forward', vjp rows for 'reverse'); returns the entries outside tolerance, worst first, indexed
    'out[3] / x[5]'. Empty when the state is too large (n_in * n_out > max_size, or more than
    max_columns FD columns: each costs two primal launches) or when everything agrees."""
    if _localization_blocker(problem, max_size, max_columns):
        return []
    tol = resolve_tolerance(problem.dtype, rtol, atol)
    base = base_state(problem) if base is None else base
    return _compare_jacobians(problem, _fd_jacobian(problem, base), _ad_jacobian(problem, mode), tol, limit)


# ----------------------------------------------------------------------------- the whole run

class _Lazy(Sequence):
    """A sequence whose item i is computed when it is read (and not kept)."""

    def __init__(self, n: int, get):
        self._n, self._get = n, get

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._get(k) for k in range(*i.indices(self._n))]
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._get(i)


class _Workspace:
    """The launches of one oracle run that the checks use more than once, cached, so that each
    refinement pays only for what it adds; and no more than that, so memory stays bounded as the
    state grows: the AD results of each direction (J v, J^T w, as the problem
    returned them) and the central estimates D(h) of the first `keep` directions (the zero guard
    and Richardson reuse them). Every other estimate is computed when a check reads it and freed
    once compared; the few that a failing run reads twice are computed twice."""

    def __init__(self, problem: DiffProblem, base: dict, directions: list[dict], cotangents: list[dict]):
        self.problem, self.base = problem, base
        self.directions, self.cotangents = directions, cotangents      # cotangents[i] goes with directions[i]
        self.keep = len(directions)
        self._cache: dict[tuple, object] = {}

    def _memo(self, key: tuple, compute):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def h(self, i: int, method: str = "central"):
        """The steps of direction i: one per group of arguments of similar magnitude (fd.py)."""
        def steps():
            central, large = relative_steps(self.problem)
            relative = large if method == "large-step" else central
            return argument_steps(self.base, self.directions[i], relative=relative)
        return self._memo(("h", i, method == "large-step"), steps)

    def jvp(self, i: int) -> Values:
        return self._memo(("jvp", i), lambda: _ad_jvp_values(self.problem, self.directions[i]))

    def vjp(self, i: int) -> Values:
        return self._memo(("vjp", i), lambda: _ad_vjp_values(self.problem, self.cotangents[i]))

    def jvp_parts(self, i: int) -> dict:
        """J v of direction i as {output: 1-d array}, in state order (what the zero guard lines up)."""
        return dict(zip((o.name for o in self.problem.outputs), _parts(self.problem.outputs, self.jvp(i), "jvp result")))

    def vjp_parts(self, i: int) -> dict:
        return dict(zip((v.name for v in self.problem.inputs), _parts(self.problem.inputs, self.vjp(i), "vjp result")))

    def add_directions(self, k: int, rng: np.random.Generator) -> None:
        self.directions.extend(make_directions(self.problem, k, rng))
        self.cotangents.extend(make_cotangent(self.problem, rng) for _ in range(k))

    def _difference(self, i: int, h) -> dict:
        return central_difference(self.problem, self.base, self.directions[i], h)

    def central(self, i: int) -> dict:
        if i < self.keep:
            return self._memo(("central", i), lambda: self._difference(i, self.h(i)))
        return self._difference(i, self.h(i))

    def estimate(self, method: str, i: int) -> dict:
        """'central': D(h); 'richardson': (4 D(h/2) - D(h)) / 3; 'large-step': Richardson at
        LARGE_STEP; by output."""
        if method == "central":
            return self.central(i)
        h = self.h(i, method)
        coarse = self.central(i) if method == "richardson" else self._difference(i, h)
        fine = self._difference(i, halved(h))
        for k, d in fine.items():      # (4 D(h/2) - D(h)) / 3, in place: fine is this call's own
            d *= 4.0
            d -= coarse[k]
            d /= 3.0
        return fine

    def forget_estimates(self) -> None:
        """After the zero guard nothing reads the central estimates again: free them for the dot test."""
        for key in [k for k in self._cache if k[0] == "central"]:
            del self._cache[key]

    def estimates(self, method: str, count: int) -> Sequence:
        """The first `count` directions' estimates, each computed when read."""
        return _Lazy(count, lambda i: self.estimate(method, i))

    def jacobians(self, mode: str) -> tuple[np.ndarray, np.ndarray]:
        fd_j = self._memo(("fdJ",), lambda: _fd_jacobian(self.problem, self.base))
        return fd_j, self._memo(("adJ", mode), lambda: _ad_jacobian(self.problem, mode))


def _check_fd(ws: _Workspace, mode: str, method: str, count: int, tol: Tolerance) -> tuple[OracleVerdict, Sequence]:
    idx = range(count)
    dirs = [ws.directions[i] for i in idx]
    refs = ws.estimates(method, count)
    if mode == "forward":
        verdict = check_forward_fd(ws.problem, dirs, refs, tol.rtol, tol.atol, ad_results=[ws.jvp(i) for i in idx])
    else:
        verdict = check_reverse_fd(ws.problem, dirs, refs, ws.cotangents[:count], tol.rtol, tol.atol,
                                   ad_gradient=[ws.vjp(i) for i in idx])
    return verdict, refs


def _fd_spread(ws: _Workspace, count: int, tol: Tolerance) -> float:
    """How far the FD estimates move between the smallest and the largest step, in tolerances:
    below 1 the reference is trustworthy and a mismatch is the derivative's fault."""
    outputs = ws.problem.outputs
    names, blocks = entry_names(outputs), _blocks(outputs)
    ratios = []
    for i in range(count):
        small = _parts(outputs, ws.estimate("central", i), "finite differences")
        large = _parts(outputs, ws.estimate("large-step", i), "finite differences")
        comp = Comparisons()
        for (start, stop), a, b in zip(blocks, small, large):
            compare_in_pieces(a, b, tol, names.window(start, stop - start), into=comp)
        ratios.append(comp.worst_ratio)
        del small, large
    return max(ratios, default=0.0)


def _attach_localization(verdict: OracleVerdict, ws: _Workspace, mode: str, tol: Tolerance,
                         max_size: int, max_columns: int) -> None:
    blocker = _localization_blocker(ws.problem, max_size, max_columns)
    if blocker:
        verdict.metrics["localization"] = f"skipped: {blocker}"
        return
    fd_j, ad_j = ws.jacobians(mode)
    entries = _compare_jacobians(ws.problem, fd_j, ad_j, tol, MAX_WORST)
    verdict.metrics["localization"] = f"{mode} Jacobian: {len(entries)} worst entries outside tolerance"
    if entries:
        top = entries[0]
        verdict.message += (f"; full {mode} Jacobian: worst entry {top.index}: "
                            f"AD {_g(top.ad)} vs FD {_g(top.fd)}")
        # The most specific evidence first; the list stays within MAX_WORST entries.
        verdict.worst = (entries + list(verdict.worst))[:MAX_WORST]


def _fd_oracle(ws: _Workspace, mode: str, k: int, tol: Tolerance, rng: np.random.Generator,
               max_size: int, max_columns: int) -> tuple[OracleVerdict, list, int]:
    """Central differences on k directions; before a failure is declared, Richardson extrapolation on
    2k directions, then the larger-step (noise-resistant) estimate on the same 2k."""
    verdict, refs = _check_fd(ws, mode, "central", k, tol)
    stages = {"central": verdict.metrics.get("worst_ratio")}
    refinement, count = "none", k
    if verdict.verdict == "fail" and not verdict.metrics.get("fd_nonfinite"):
        ws.add_directions(k, rng)
        count = 2 * k
        first_refined = None
        for method in ("richardson", "large-step"):
            attempt, attempt_refs = _check_fd(ws, mode, method, count, tol)
            stages[method] = attempt.metrics.get("worst_ratio")
            first_refined = first_refined or (attempt, attempt_refs)
            if attempt.verdict == "pass":
                verdict, refs, refinement = attempt, attempt_refs, method
                break
        else:
            # Richardson is the most accurate estimate for a smooth primal: report its mismatch.
            verdict, refs = first_refined
            refinement = "richardson and large-step both failed"
            spread = _fd_spread(ws, count, tol)
            verdict.metrics["fd_spread_ratio"] = spread
            verdict.message += (
                f"; finite differences are stable across step sizes (spread {_e(spread)} x tol), so the "
                f"derivative is at fault" if spread < 1.0 else
                f"; finite differences change with the step size ({_e(spread)} x tol): the primal may be "
                f"noisy, non-smooth or nondeterministic near the base point")
            verdict.metrics["h_large"] = [largest_step(ws.h(i, "large-step")) for i in range(count)]
    verdict.metrics.update({"refinement": refinement, "stages": stages, "directions": count,
                            "h": [largest_step(ws.h(i)) for i in range(count)]})
    if any(len(ws.h(i)) > 1 for i in range(count)):      # several magnitudes: one step per group
        verdict.metrics["h_per_argument"] = [{n: h for h, names in ws.h(i) for n in names} for i in range(count)]
    if getattr(ws.problem, "fd_precision", None) == "float32":
        verdict.metrics["fd_precision"] = "float32"
    if refinement == "large-step":
        verdict.metrics["h_large"] = [largest_step(ws.h(i, "large-step")) for i in range(count)]
    if verdict.verdict == "fail":
        _attach_localization(verdict, ws, mode, tol, max_size, max_columns)
        _attach_precision_divergence(verdict, ws, tol)
    return verdict, refs, count


PRECISION_DIVERGES = "the float32 program and its float64 twin compute different values"


def _attach_precision_divergence(verdict: OracleVerdict, ws: _Workspace, tol: Tolerance) -> None:
    """Finite differences run the kernel in float64; when the run's own precision makes different
    choices (a comparison of two nearly equal values, a float32 rounding that crosses a branch), the
    float64 reference differentiates another program, and a mismatch there is not the engine's.
    Compare the two primals at the base point and say so, naming the first diverging entry."""
    problem = ws.problem
    if getattr(problem, "dtype", "float64") == "float64" or not hasattr(problem, "primal_native"):
        return
    if getattr(problem, "fd_precision", "float64") != "float64":
        return
    wide = flatten(problem.outputs, problem.primal64(ws.base))
    native = flatten(problem.outputs, problem.primal_native(ws.base))
    xp = xp_of(wide)
    finite = xp.isfinite(wide)
    floor = float(xp.sqrt((wide[finite] ** 2).mean())) if bool(finite.any()) else 0.0
    with np.errstate(invalid="ignore"):
        diverging = ~(xp.abs(native - wide) <= tol.atol + tol.rtol * (xp.abs(wide) + floor))
    count = int(diverging.sum())
    verdict.metrics["precision_diverging_entries"] = count
    if count:
        k = first_true(diverging)
        verdict.message += (f"; but {PRECISION_DIVERGES} at {count} output entr{'y' if count == 1 else 'ies'} "
                            f"(first {_entry_name(problem.outputs, k)}: {problem.dtype} {_g(native[k])} vs "
                            f"float64 {_g(wide[k])}): the kernel's control flow depends on rounding there, so "
                            f"float64 finite differences do not judge the {problem.dtype} derivative "
                            f"(choose inputs away from the tie, or run the case in float64)")


def _entry_name(vars_: list, k: int) -> str:
    """The readable name of flat entry k (`out[3]`, `x[1,2]`, `a`), without naming every entry."""
    for v in vars_:
        n = int(np.prod(v.shape)) if v.shape else 1
        if k < n:
            return v.name if not v.shape else f"{v.name}[{','.join(map(str, np.unravel_index(k, v.shape)))}]"
        k -= n
    raise IndexError(k)


def _as_generator(rng) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def run_gradient_oracles(problem: DiffProblem, mode: str, *, directions: int = 2, rtol: float | None = None,
                         atol: float | None = None, dot: bool = True, zero_guard: bool = True,
                         rng: np.random.Generator | int, localize_max_size: int = 4096,
                         localize_max_columns: int = 1024, first: Values | None = None,
                         fd: bool = True) -> list[OracleVerdict]:
    """Every gradient oracle that applies to `mode` ('forward' | 'reverse'), in the order
    [fd-<mode>, zero (if zero_guard), dot (if dot)]. Each direction v_i gets its own cotangent w_i.
    The k directions, then their k cotangents, then (on a refinement) k more directions and their
    cotangents are drawn from `rng` in that order, so a case seed reproduces the run exactly.
    `first`, when given, replaces the first direction (forward) or the first cotangent (reverse)
    with values chosen by the case (`shadow: {init: ...}`), zero for the arguments it omits.
    `fd=False` (the case's `check: {fd: false}`) runs no finite differences: the FD check and the
    zero guard (which judges against FD) are skipped, the dot test still runs."""
    if mode not in ("forward", "reverse"):
        raise ValueError(f"gradient oracles check mode 'forward' or 'reverse', not {mode!r}")
    fd_name = FD_FORWARD if mode == "forward" else FD_REVERSE
    names = [fd_name] + ([ZERO] if zero_guard else []) + ([DOT] if dot else [])
    reason = _skip_reason(problem)
    if reason:
        return [OracleVerdict(n, "skip", reason) for n in names]

    tol = resolve_tolerance(problem.dtype, rtol, atol)
    rng = _as_generator(rng)
    k = max(1, int(directions))
    base = base_state(problem)
    first_directions = make_directions(problem, k, rng)
    cotangents = [make_cotangent(problem, rng) for _ in range(k)]
    if first:
        xp = xp_of_problem(problem)
        chosen = lambda vars_: {v.name: xp.broadcast_to(f64(first.get(v.name, 0.0), xp),  # noqa: E731
                                                        v.shape).copy() for v in vars_}
        if mode == "forward":
            first_directions[0] = chosen(problem.inputs)
        else:
            cotangents[0] = chosen(problem.outputs)
    ws = _Workspace(problem, base, first_directions, cotangents)

    if not fd:
        off = "finite differences are turned off by the case (check: {fd: false})"
        fd_verdict = OracleVerdict(fd_name, "skip", off)
        verdicts = [fd_verdict] + ([OracleVerdict(ZERO, "skip", f"the zero guard judges against FD; {off}")]
                                   if zero_guard else [])
        if dot:
            verdicts.append(_dot_oracle(ws, mode, k, tol, fd_verdict, localize_max_size, localize_max_columns))
        return verdicts

    fd_verdict, refs, count = _fd_oracle(ws, mode, k, tol, rng, localize_max_size, localize_max_columns)
    verdicts = [fd_verdict]

    if zero_guard:
        if mode == "forward":
            zero = check_zero(_Lazy(count, ws.jvp_parts), refs, rtol=tol.rtol, atol=tol.atol,
                              names=entry_names(problem.outputs), aligned=True)
        else:
            dots = np.array(_reverse_dots(problem, refs, ws.cotangents[:count]))
            # <J^T w, v> sums n_in terms of a unit-variance direction: atol grows like sqrt(n_in).
            n_in = sum(map(_size, problem.inputs))
            zero = check_zero(_Lazy(count, ws.vjp_parts), [dots], rtol=tol.rtol,
                              atol=tol.atol * math.sqrt(n_in), names=entry_names(problem.inputs), aligned=False)
        # Per argument only when the FD reference is trustworthy: finite, and stable across step sizes.
        if zero.verdict == "pass" and fd_verdict.verdict == "fail" and not fd_verdict.metrics.get("fd_nonfinite") \
                and fd_verdict.metrics.get("fd_spread_ratio", 0.0) < 1.0:
            zero = _zero_per_argument(ws, mode, k, tol, fd_verdict) or zero
        verdicts.append(zero)

    if dot:
        ws.forget_estimates()
        verdicts.append(_dot_oracle(ws, mode, k, tol, fd_verdict, localize_max_size, localize_max_columns))
    return verdicts


def _dot_oracle(ws: _Workspace, mode: str, k: int, tol: Tolerance, fd_verdict: OracleVerdict,
                max_size: int, max_columns: int) -> OracleVerdict:
    problem = ws.problem
    if not (_available(problem, "jvp") and _available(problem, "vjp")):
        return OracleVerdict(DOT, "skip", "needs both forward (jvp) and reverse (vjp) derivatives")
    try:
        verdict = check_dot(problem, ws.directions[:k], ws.cotangents[:k], tol.rtol, tol.atol,
                            ad_results=_Lazy(k, ws.jvp), ad_gradient=_Lazy(k, ws.vjp))
    except (NotImplementedError, UnsupportedError) as exc:
        # The other mode being refused is that mode's verdict to give (its own run reports it), not
        # a failure of the mode under test.
        return OracleVerdict(DOT, "skip", f"a derivative mode is not available: {type(exc).__name__}: {exc}")
    if verdict.verdict == "fail" and fd_verdict.verdict == "pass":
        # FD vouched for this mode's derivative, so the other mode is the suspect: localize that one.
        other = "reverse" if mode == "forward" else "forward"
        verdict.message += f"; {fd_verdict.name} passed, so the {other} derivative is the suspect"
        _attach_localization(verdict, ws, other, tol, max_size, max_columns)
    return verdict
