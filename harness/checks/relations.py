"""Activity metamorphic relations and the `check: {activities: all}` enumeration
(docs/activities.md).

A launch's derivative must not depend on how the same mathematics is annotated. Each relation runs
the launch a second way and compares derivatives along one seeded direction (forward: J v over the
run's outputs) or cotangent (reverse: J^T w over the run's inputs), with no finite differences:

    rel-const    each const float argument, made Duplicated with a zero tangent / cotangent
                 (Active with a zero tangent for scalars), leaves every other derivative unchanged
    rel-noneed   Duplicated <-> DuplicatedNoNeed (all swapped at once) gives the same derivatives
    rel-batch    BatchDuplicated(k) with k distinct directions equals k Duplicated launches; a case
                 without batch arguments is checked at width 2 (its differentiable arrays batched)
    rel-active   an Active (or forward-seeded) scalar equals a one-element Duplicated buffer: the
                 kernel is rewritten to read `s = s_buf[0]` (kernel-style launches only)

Each verdict reports the largest difference relative to the reference derivative's largest entry
(`max_rel_diff`) against a reordering tolerance (`RELATION_RTOL`); the worst entries list
`ad` = the variant's value and `fd` = the reference's. A variant that the engine refuses (an
ActivityError, an UnsupportedError, ...) makes the relation a skip that says why.

`activities_verdict` runs the gradient oracles once per valid activity assignment of the case's
arguments (at most MAX_COMBINATIONS) and summarizes them in one verdict named 'activities'.
"""
from __future__ import annotations

import ast
import copy
import itertools
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from harness import policy
from harness.core.errors import HarnessError
from harness.cases.inputs import HostArg
from harness.problems.kernel import KernelProblem
from harness.problems.layouts import self_overlap
from harness.model import ArraySpec, OracleVerdict, WorstEntry
from harness.oracles.arrays import f64, finite_max_abs, top_indices, xp_of, xp_of_problem
from harness.oracles.fd import copy_values, make_cotangent, make_directions
from harness.oracles.names import array_entry_names

# Relative to the reference derivative's largest entry (harness.policy says why these numbers).
RELATION_RTOL = policy.RELATION_RTOL
MAX_COMBINATIONS = 64

_DIFF_ARRAY = ("duplicated", "duplicated_no_need", "batch_duplicated")


def _is_float(dtype) -> bool:
    return dtype is not None and np.issubdtype(np.dtype(dtype), np.floating)


def _float_array(a: HostArg) -> bool:
    return a.spec.kind == "array" and _is_float(a.value.dtype)


def _float_scalar(a: HostArg) -> bool:
    return a.spec.kind == "scalar" and _is_float(getattr(a.value, "dtype", None))


def with_specs(problem: KernelProblem, changes: dict[str, dict], kernel=None,
             values: dict | None = None) -> KernelProblem:
    """The same launch with some arguments' specs changed (and, optionally, values and kernel)."""
    args = []
    for a in problem.args:
        spec = replace(a.spec, **changes[a.spec.name]) if a.spec.name in changes else a.spec
        args.append(HostArg(spec, (values or {}).get(a.spec.name, a.value)))
    return problem.with_launch(kernel=kernel, args=args)


def _evaluate(problem: KernelProblem, mode: str, v: dict, w: dict) -> dict:
    return problem.jvp(copy_values(v)) if mode == "forward" else problem.vjp(copy_values(w))


def _keys(problem: KernelProblem, mode: str) -> list[str]:
    """What a derivative of `mode` produces: forward J v over outputs, reverse J^T w over inputs."""
    return [s.name for s in (problem.outputs if mode == "forward" else problem.inputs)]


def compare_derivatives(ref: dict, got: dict, keys: list[str], labels: str = "") -> dict:
    """Max |got - ref| relative to max |ref| over `keys` (NaN equal to NaN), with the worst entries.
    Array work in the derivatives' own module; only the three worst entries per key come to the host."""
    flat_ref = {k: f64(ref[k]).reshape(-1) for k in keys}
    flat_got = {k: f64(got[k], xp_of(flat_ref[k])).reshape(-1) if k in got else xp_of(flat_ref[k]).zeros_like(flat_ref[k])
                for k in keys}
    scale = max([finite_max_abs(r) for r in flat_ref.values()] + [0.0])
    scale = scale if scale > 0 else 1.0
    entries = []
    max_abs = 0.0
    for k in keys:
        r, g = flat_ref[k], flat_got[k]
        if r.shape != g.shape:
            raise ValueError(f"{k}: variant gives {g.size} values, reference {r.size}")
        xp = xp_of(r, g)
        diff = xp.where(xp.isnan(r) & xp.isnan(g), 0.0, xp.abs(g - r))
        diff = xp.where(xp.isnan(diff), np.inf, diff)
        if diff.size:
            max_abs = max(max_abs, float(diff.max()))
        names = array_entry_names(k, tuple(getattr(ref[k], "shape", ())))
        for i in top_indices(diff, min(3, diff.size)):
            d = float(diff[i])
            if d > 0:
                entries.append(WorstEntry(f"{names[i]}{labels}", float(g[i]), float(r[i]), d, d / scale))
    entries.sort(key=lambda e: -e.abs_err)
    return {"max_abs_diff": max_abs, "max_rel_diff": max_abs / scale, "scale": scale, "worst": entries[:8]}


def _equal(a, b) -> bool:
    xp = xp_of(a, b)
    a, b = f64(a, xp), f64(b, xp)
    return a.shape == b.shape and bool((a == b).all())


def _verdict(name: str, what: str, results: list[dict], tol: float, extra: dict | None = None) -> OracleVerdict:
    rel = max(r["max_rel_diff"] for r in results)
    worst = sorted((e for r in results for e in r["worst"]), key=lambda e: -e.abs_err)[:8]
    metrics = {"max_rel_diff": rel, "max_abs_diff": max(r["max_abs_diff"] for r in results), "rtol": tol,
               **(extra or {})}
    if rel <= tol:
        return OracleVerdict(name, "pass", f"{what}: agree (max rel diff {rel:.3g} <= {tol:.0e})", metrics, worst)
    top = worst[0]
    return OracleVerdict(name, "fail", f"{what}: differ by {rel:.3g} relative (> {tol:.0e}); worst {top.index}: "
                         f"{top.ad:.6g} vs {top.fd:.6g}", metrics, worst)


def _refused(name: str, what: str, exc: Exception) -> OracleVerdict:
    return OracleVerdict(name, "skip", f"not checked: {what} is refused: {type(exc).__name__}: {exc}")


# ----------------------------------------------------------------------------- the relations

class _Relations:
    def __init__(self, problem: KernelProblem, mode: str, rng: np.random.Generator, style: str,
                 known: list[tuple[str, dict, dict]]):
        self.p, self.mode, self.style = problem, mode, style
        self.tol = policy.relation_rtol(problem.dtype)
        self.v = make_directions(problem, 1, rng)[0]
        self.w = make_cotangent(problem, rng)
        self.v2 = make_directions(problem, 1, rng)[0]
        self.w2 = make_cotangent(problem, rng)
        self.rng = rng
        self.keys = _keys(problem, mode)
        self._ref = self._ref2 = None
        # The gradient oracles' first two derivative launches on this very problem (a LaunchLog's
        # history) are references for free: take their directions instead of launching twice more.
        known = [(given, result) for m, given, result in known if m == mode]
        slot = "v" if mode == "forward" else "w"
        state = {s.name for s in (problem.inputs if mode == "forward" else problem.outputs)}
        if known and set(known[0][0]) >= state:
            setattr(self, slot, known[0][0])
            self._ref = known[0][1]
            second = next((k for k in known[1:] if not all(_equal(k[0][n], known[0][0][n]) for n in k[0])), None)
            if second is not None:
                setattr(self, slot + "2", second[0])
                self._ref2 = second[1]
        # A forward run never reads its cotangents, a reverse run its directions: drawn (the seed's
        # stream stays the same), then dropped, so no state-sized arrays are held for nothing.
        unused = ("w", "w2") if mode == "forward" else ("v", "v2")
        for name in unused:
            setattr(self, name, {})

    def reference(self) -> dict:
        """The run's own activities along (v, w): what every variant is compared with."""
        if self._ref is None:
            self._ref = _evaluate(with_specs(self.p, {}), self.mode, self.v, self.w)
        return self._ref

    def reference2(self) -> dict:
        """The same along the second direction (v2, w2)."""
        if self._ref2 is None:
            self._ref2 = _evaluate(with_specs(self.p, {}), self.mode, self.v2, self.w2)
        return self._ref2

    def run(self) -> list[OracleVerdict]:
        out = []
        for relation, name, what in ((self.const, "rel-const", "the Duplicated-with-zero-shadow variant"),
                                     (self.noneed, "rel-noneed", "the DuplicatedNoNeed/Duplicated swap"),
                                     (self.batch, "rel-batch", "the batched variant"),
                                     (self.active, "rel-active", "the one-element buffer variant")):
            t0 = time.time()
            try:
                verdict = relation()
            except HarnessError as exc:
                verdict = _refused(name, what, exc)
            except Exception as exc:           # a crash of a variant is a finding, not a harness error
                verdict = OracleVerdict(name, "fail", f"{what} raised {type(exc).__name__}: {exc}")
            if verdict is not None:
                verdict.metrics["seconds"] = round(time.time() - t0, 4)
                out.append(verdict)
        return out

    # rel-const --------------------------------------------------------------
    def const(self) -> OracleVerdict | None:
        consts = [a for a in self.p.args if a.spec.activity == "const" and
                  (_float_scalar(a) or (_float_array(a) and a.spec.alias is None and self_overlap(a.value) is None))]
        if not consts:
            return None
        changes = {}
        for a in consts:
            if a.spec.kind == "scalar":
                changes[a.spec.name] = {"activity": "active"}
            elif self.p.width > 1:
                changes[a.spec.name] = {"activity": "batch_duplicated", "width": self.p.width}
            else:
                changes[a.spec.name] = {"activity": "duplicated"}
        names = ", ".join(changes)
        variant = with_specs(self.p, changes)
        got = _evaluate(variant, self.mode, self.v, self.w)      # the new entries get zeros
        return _verdict("rel-const", f"Const({names}) vs Duplicated({names}, zero shadow), other derivatives",
                        [compare_derivatives(self.reference(), got, self.keys)], self.tol, {"arguments": list(changes)})

    # rel-noneed -------------------------------------------------------------
    def noneed(self) -> OracleVerdict | None:
        swap = {"duplicated": "duplicated_no_need", "duplicated_no_need": "duplicated"}
        changes = {a.spec.name: {"activity": swap[a.spec.activity]} for a in self.p.args
                   if a.spec.kind == "array" and a.spec.activity in swap}
        if not changes:
            return None
        got = _evaluate(with_specs(self.p, changes), self.mode, self.v, self.w)
        desc = ", ".join(f"{n}: {self._act(n)} -> {c['activity']}" for n, c in changes.items())
        return _verdict("rel-noneed", f"DuplicatedNoNeed vs Duplicated ({desc})",
                        [compare_derivatives(self.reference(), got, self.keys)], self.tol, {"arguments": list(changes)})

    def _act(self, name: str) -> str:
        return next(a.spec.activity for a in self.p.args if a.spec.name == name)

    # rel-batch --------------------------------------------------------------
    def batch(self) -> OracleVerdict | None:
        batched = [a for a in self.p.args if a.spec.activity == "batch_duplicated"]
        rng = self.rng
        if batched:                      # the case's own width: k distinct directions vs k launches
            width = self.p.width
            single = with_specs(self.p, {a.spec.name: {"activity": "duplicated", "width": None} for a in batched})
            lanes_v = [self.v, self.v2] + make_directions(self.p, max(0, width - 2), rng)
            lanes_w = [self.w, self.w2] + [make_cotangent(self.p, rng) for _ in range(max(0, width - 2))]
            lanes_v, lanes_w = lanes_v[:width], lanes_w[:width]
            refs = [_evaluate(single, self.mode, lanes_v[j], lanes_w[j]) for j in range(width)]
            lane_problem = self.p
        else:
            diff = [a for a in self.p.args if a.spec.kind == "array" and a.spec.activity in ("duplicated", "duplicated_no_need")]
            if not diff:
                return None
            width = 2
            lanes_v, lanes_w = [self.v, self.v2], [self.w, self.w2]
            refs = [self.reference(), self.reference2()]
            lane_problem = with_specs(self.p, {a.spec.name: {"activity": "batch_duplicated", "width": 2} for a in diff})
        seeds = lanes_v if self.mode == "forward" else lanes_w
        lanes = lane_problem.derivative(self.mode, seeds[0], lane_seeds=[copy_values(s) for s in seeds]).lanes
        results = [compare_derivatives(refs[j], lanes[j], self.keys, labels=f" (lane {j})")
                   for j in range(width)]
        what = (f"BatchDuplicated width {width} vs {width} Duplicated launches, distinct directions"
                + ("" if batched else " (the case's differentiable arrays batched)"))
        return _verdict("rel-batch", what, results, self.tol, {"width": width})

    # rel-active -------------------------------------------------------------
    def active(self) -> OracleVerdict | None:
        scalars = [a for a in self.p.args if a.spec.kind == "scalar" and a.spec.activity != "const"]
        if not scalars:
            return None
        if self.style != "kernel":
            return OracleVerdict("rel-active", "skip",
                                 "not checked: the kernel is generated by the broadcast front end, so it cannot be "
                                 "rewritten to read the scalar from a buffer; the fd oracles check the Active scalar")
        names = [a.spec.name for a in scalars]
        kernel = buffered_kernel(self.p.kernel, names)
        changes, values = {}, {}
        for a in scalars:
            dtype = str(a.value.dtype)
            changes[a.spec.name] = {"kind": "array", "activity": "duplicated", "value": None, "dtype": None,
                                    "array": ArraySpec((1,), dtype)}
            values[a.spec.name] = np.array([a.value], dtype=dtype)
        variant = with_specs(self.p, changes, kernel=kernel, values=values)
        xp = xp_of_problem(self.p)
        if self.mode == "forward":
            v, w = {**self.v, **{n: f64(self.v[n], xp).reshape((1,)) for n in names}}, {}
        else:                                                  # the buffer's cotangent: none from outside
            v, w = {}, {**self.w, **{n: xp.zeros(1) for n in names}}
        got = _evaluate(variant, self.mode, v, w)
        where = "tangents" if self.mode == "forward" else "adjoints"
        return _verdict("rel-active", f"Active {', '.join(names)} vs one-element Duplicated buffer(s), {where}",
                        [compare_derivatives(self.reference(), got, self.keys)], self._active_tol(),
                        {"arguments": names})

    def _active_tol(self) -> float:
        # An Active scalar's adjoint is a sum over every thread, reduced hierarchically; the buffer's
        # is accumulated with per-thread atomics in the kernel's dtype: float32 sums of n terms differ
        # by up to about sqrt(n) ulps of the largest partial sum.
        threads = math.prod(self.p.config.grid) * math.prod(self.p.config.block)
        return self.tol * max(1.0, math.sqrt(threads / 64.0)) if self.p.dtype == "float32" else self.tol


def relation_verdicts(problem: KernelProblem, mode: str, *, rng: np.random.Generator | int = 0,
                      style: str = "kernel", known: list[tuple[str, dict, dict]] = ()) -> list[OracleVerdict]:
    """Every activity relation that applies to this launch, one verdict each (none when a relation
    does not apply, e.g. rel-const without const float arguments). `known`: derivative results
    already launched on this problem, (mode, seed, result) as a LaunchLog's history keeps them."""
    if mode not in ("forward", "reverse") or not problem.inputs or not problem.outputs:
        return []
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return _Relations(problem, mode, rng, style, list(known)).run()


# ----------------------------------------------------------------------------- rewriting a kernel

def buffered_kernel(kernel, scalars: list[str]):
    """A copy of `kernel` that takes each named scalar parameter as a one-element array and reads it
    first thing (`s = s_buf[0]`). Written next to the generated kernels (content-hashed) as a copy
    of the kernel's whole module, so every name the kernel uses resolves as in the original."""
    from harness.engine.runtime.cache import load_function, write_module
    from harness.engine.frontend.source import python_function
    fn = python_function(kernel)
    path = Path(fn.__code__.co_filename)
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    fdef = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == fn.__name__), None)
    if fdef is None:
        raise HarnessError(f"cannot find the top-level definition of {fn.__name__} in {path}")
    new = copy.deepcopy(fdef)
    new.name = f"{fn.__name__}__scalar_buffers"
    new.decorator_list = []
    taken = {a.arg for a in new.args.args}
    reads = []
    for arg in new.args.args:
        if arg.arg in scalars:
            buf = f"{arg.arg}_buf"
            while buf in taken:
                buf += "_"
            taken.add(buf)
            reads.append(ast.parse(f"{arg.arg} = {buf}[0]").body[0])
            arg.arg = buf
    doc = 1 if new.body and isinstance(new.body[0], ast.Expr) and isinstance(getattr(new.body[0], "value", None),
                                                                             ast.Constant) else 0
    new.body[doc:doc] = reads
    if "__file__" in text:
        # the copy keeps the original's __file__, so that a module which loads a file beside itself
        # (`Path(__file__).with_name(...)`) finds it from the copy too
        body = [n for n in tree.body if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")
                and not (n is tree.body[0] and isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        lines = text.splitlines(keepends=True)
        at = body[0].lineno - 1 if body else len(lines)
        text = "".join(lines[:at]) + f"__file__ = {str(path)!r}\n" + "".join(lines[at:])
    source = (text.rstrip("\n") + "\n\n\n# Generated by harness.checks.relations (rel-active): "
              f"{fn.__name__} with {', '.join(scalars)} read from one-element buffers.\n"
              + ast.unparse(ast.fix_missing_locations(new)) + "\n")
    return load_function(write_module(f"{fn.__name__}__scalar_buffers", source), new.name)


# ----------------------------------------------------------------------------- activities: all

def activity_choices(a: HostArg) -> tuple[str, ...]:
    """The activities an argument may take: float arrays const / duplicated / duplicated_no_need,
    float scalars const / active, everything else (and aliases, broadcast views) const only."""
    if _float_array(a) and a.spec.alias is None and self_overlap(a.value) is None:
        return ("const", "duplicated", "duplicated_no_need")
    if _float_scalar(a):
        return ("const", "active")
    return ("const",)


def activity_combinations(args: list[HostArg], limit: int = MAX_COMBINATIONS) -> tuple[list[dict], int]:
    """Every assignment but the all-const one, in product order (const first), at most `limit`;
    returns (assignments, how many there are in all)."""
    names = [a.spec.name for a in args]
    every = itertools.product(*(activity_choices(a) for a in args))
    total = math.prod(len(activity_choices(a)) for a in args) - 1
    out = []
    for combo in every:
        if all(c == "const" for c in combo):
            continue
        if len(out) == limit:
            break
        out.append(dict(zip(names, combo)))
    return out, total


_SHORT = {"const": "const", "duplicated": "dup", "duplicated_no_need": "noneed", "active": "active"}


def _label(assignment: dict) -> str:
    return " ".join(f"{n}={_SHORT.get(a, a)}" for n, a in assignment.items())


def activities_verdict(problem: KernelProblem, mode: str, *, directions: int = 2, rtol=None, atol=None,
                       zero_guard: bool = True, seed: int = 0, limit: int = MAX_COMBINATIONS) -> OracleVerdict:
    """`check: {activities: all}`: the gradient oracles of `mode` (FD and the zero guard; the dot
    test is left to the declared activities' runs) for every valid activity assignment, summarized
    in one verdict named 'activities'. A combination the engine refuses with a harness error (an
    ActivityError, an UnsupportedError) is listed as refused, not failed."""
    from harness.problems.launch_log import LaunchLog
    from harness.oracles import run_gradient_oracles
    combos, total = activity_combinations(problem.args, limit)
    reference = None            # the primal arrays after a primal launch: the same for every variant
    rows, counts = [], {"pass": 0, "fail": 0, "refused": 0, "error": 0}
    for n, assignment in enumerate(combos):
        changes = {name: {"activity": act, "width": None} for name, act in assignment.items()}
        try:
            variant = with_specs(problem, changes)
            if reference is None:
                reference = problem.primal_finals()
            diff = {a.spec.name for a in variant.args if a.spec.activity != "const" and a.spec.kind == "array"}
            variant = LaunchLog(variant, {k: v for k, v in reference.items() if k in diff})
            verdicts = run_gradient_oracles(variant, mode, directions=directions, rtol=rtol, atol=atol, dot=False,
                                            zero_guard=zero_guard, rng=np.random.default_rng(seed + 1000 + n))
            failed = [v for v in verdicts if v.verdict == "fail"]
            if variant.primal_state_error > policy.repeat_rtol(variant.dtype):   # as the gradient run's
                failed.append(OracleVerdict("primal-state", "fail", f"primal arrays differ from a primal launch "
                                            f"(rel err {variant.primal_state_error:.3g})"))
            result = "fail" if failed else "pass"
            message = "; ".join(f"{v.name}: {v.message}" for v in failed) if failed else \
                ", ".join(f"{v.name} {v.verdict}" for v in verdicts)
        except HarnessError as exc:
            result, message = "refused", f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            result, message = "error", f"{type(exc).__name__}: {exc}"
        counts[result] += 1
        rows.append({"activities": assignment, "label": _label(assignment), "result": result, "message": message})
    truncated = total > len(combos)
    scope = (f"{len(combos)} of {total} activity combinations (truncated at {limit})" if truncated else
             f"all {total} activity combinations")
    summary = (f"{scope} in {mode} mode (the all-const one excluded): {counts['pass']} pass, "
               f"{counts['refused']} refused, {counts['fail']} fail" + (f", {counts['error']} error" if counts["error"] else ""))
    metrics = {"combinations": rows, "total": total, "checked": len(combos), "truncated": truncated, **counts}
    bad = [r for r in rows if r["result"] in ("fail", "error")]
    if bad:
        listed = "; ".join(f"[{r['label']}] {r['message'][:300]}" for r in bad[:4])
        more = f"; and {len(bad) - 4} more" if len(bad) > 4 else ""
        return OracleVerdict("activities", "fail", f"{summary}: {listed}{more}", metrics)
    refused = [r for r in rows if r["result"] == "refused"]
    if refused:
        summary += f" (refused, e.g. [{refused[0]['label']}]: {refused[0]['message'][:200]})"
    return OracleVerdict("activities", "pass", summary, metrics)
