"""Execute one Run: build its arguments, launch through the engine, apply the oracles, and judge
the result against the case's expectation. Always returns an Outcome; never raises for a bad run.
"""
from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .backends import get_backend
from .cases.expand import apply_dtype
from .engine.launch import Engine, EngineOptions, LaunchConfig
from .errors import KernelFaultError, LaunchTimeoutError, UnsupportedError
from .inputs import HostArg, build_args, load_function
from .kernel_problem import KernelProblem
from .layouts import device_view
from .model import ArraySpec, ErrorRecord, OracleVerdict, Outcome, Run
from .verdicts import check_jobs, check_ptx, judge

FAILING = ("FAIL", "ZERO", "NONDET", "ERROR")


def launch_config(case, args: list[HostArg]) -> LaunchConfig:
    spec = case.launch
    if spec.threads:
        return LaunchConfig.threads(spec.threads if len(spec.threads) > 1 else spec.threads[0],
                                    spec.block if spec.block else 128)
    if spec.grid and spec.block:
        return LaunchConfig.of(spec.grid, spec.block)
    raise UnsupportedError(f"launch style '{spec.style}' needs threads or grid and block")


def repro_command(run: Run) -> str:
    return f"pytest '{run.run_id}' --backend {run.backend}"


@contextmanager
def time_limit(seconds: float, what: str):
    """Raise LaunchTimeoutError in the main thread after `seconds` (a hung simulator barrier,
    a kernel that never returns control). Elsewhere, or with no limit, do nothing."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise LaunchTimeoutError(f"{what} ran for more than {seconds:g} s (hung kernel or barrier?)")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Runner:
    def __init__(self, root: Path, backend_name: str | None = None, timeout_s: float | None = None):
        self.root = Path(root)
        self.timeout_s = float(os.environ.get("HARNESS_RUN_TIMEOUT", 300)) if timeout_s is None else timeout_s
        self.backend = get_backend(backend_name)
        self._engines: dict[tuple, Engine] = {}

    def engine(self, options: dict) -> Engine:
        key = tuple(sorted(options.items()))
        if key not in self._engines:
            self._engines[key] = Engine(self.backend, EngineOptions.from_dict(options))
        return self._engines[key]

    def execute(self, run: Run, isolate: bool = True) -> Outcome:
        if isolate and self.backend.name == "cuda" and run.case.expect.error_type == "KernelFaultError":
            return self.execute_isolated(run)
        case = run.case
        started = time.time()
        outcome = self.new_outcome(run, started)
        verdicts: list[OracleVerdict] = []
        error = None
        try:
            if self.backend.poisoned:
                raise KernelFaultError("not run: an earlier kernel fault left this process's CUDA context "
                                       "unusable (run with -n so a fresh worker takes over)")
            with time_limit(self.timeout_s, run.run_id):
                verdicts = self._execute(run, outcome)
        except Exception as exc:            # every failure of a run is that run's result alone
            error = exc
            outcome.error = ErrorRecord(type(exc).__name__, str(exc), traceback=traceback.format_exc(limit=8))
        outcome.oracles = verdicts
        outcome.state, outcome.message = judge(case.expect, verdicts, error)
        if not self.backend.can_launch and error is None and case.expect.kind in ("error", "unsupported"):
            outcome.state = "SKIP"           # e.g. a tape overflow: only a launch can show it
            outcome.message = (f"compiled; the expected {case.expect.error_type or 'UnsupportedError'} "
                               "arises only when the kernel runs, which this compile-only tier does not do")
        if not self.backend.can_launch and outcome.state == "XPASS":
            outcome.state = "SKIP"           # a known bug in the results (NONDET, FAIL) needs a launch
            outcome.message = (f"compiled; the known bug ({case.expect.reason}) shows only when the kernel runs, "
                               "which this compile-only tier does not do")
        outcome.duration = time.time() - started
        return outcome

    def new_outcome(self, run: Run, started: float = 0.0) -> Outcome:
        """An outcome carrying the run's identity and the case's description, not yet judged."""
        case = run.case
        return Outcome(run_id=run.run_id, case_id=case.id, source=case.source, variant=case.variant,
                       mode=run.mode, dtype=run.dtype, backend=self.backend.name, state="PASS",
                       expect=case.expect.kind, title=case.title, description=case.description,
                       tags=list(case.tags), links=list(case.links), kernel=str(case.kernel),
                       repro=repro_command(run), started=started)

    def execute_isolated(self, run: Run) -> Outcome:
        """A run expected to fault, in a fresh process: the fault cannot poison this one's context."""
        import json
        import subprocess
        import sys
        cmd = [sys.executable, "-m", "harness.isolated", str(self.root), str(self.root / run.case.source),
               run.name, self.backend.name]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout_s or None,
                                  cwd=self.root)
            return Outcome.from_json(json.loads(done.stdout.strip().splitlines()[-1]))
        except Exception as exc:              # the child died or printed nothing usable
            outcome = self.new_outcome(run)
            outcome.state = "ERROR"
            outcome.error = ErrorRecord(type(exc).__name__, f"isolated run failed: {exc}")
            outcome.message = outcome.error.message
            return outcome

    # ------------------------------------------------------------------ internals
    def _execute(self, run: Run, outcome: Outcome) -> list[OracleVerdict]:
        case = run.case
        t0 = time.time()
        specs = apply_dtype(case, run.dtype)
        kernel = load_function(case.kernel, self.root)
        args = build_args(specs, case.seed, self.root)
        outcome.args = [{"name": a.spec.name, "kind": a.spec.kind, "activity": a.spec.activity,
                         "shape": list(np.shape(a.value)) if a.spec.kind == "array" else [],
                         "dtype": str(getattr(a.value, "dtype", a.spec.dtype or ""))} for a in args]
        engine = self.engine(case.engine)
        if case.launch.style in ("broadcast", "map"):     # the front end generates the kernel around f
            from .frontends.broadcast import launcher_for
            engine = launcher_for(engine, case.launch.style, [a.spec.name for a in args])
            config = engine.config_for(args[0].value, case.launch.block)
        else:
            config = launch_config(case, args)
        outcome.timings["setup_s"] = time.time() - t0
        verdicts: list[OracleVerdict] = []

        if not self.backend.can_launch:                  # ptx tier: compile every kernel, check facts
            t0 = time.time()
            values = [a.value for a in args]
            plans = [engine.prepare(kernel, config, values, "primal")[0]]
            if run.mode != "primal":
                problem = KernelProblem(engine, kernel, config, args)
                plans.append(engine.prepare(kernel, config, problem.annotated(run.mode, values), run.mode)[0])
            from .backends.ptx import ptx_facts
            for plan in plans:
                outcome.ptx[f"{plan.job.function}__{plan.mode}"] = ptx_facts(plan.ptx)
                if plan.source_path:
                    outcome.sources[plan.mode] = plan.source_path
            outcome.jobs = [j.record() for p in plans for j in p.job.tree()]
            outcome.timings["compile_s"] = time.time() - t0
            verdicts.append(check_ptx(case.ptx, run.mode, outcome.ptx, kernel_name=plans[-1].job.function))
            if case.jobs:
                verdicts.append(check_jobs(case.jobs, outcome.jobs))
            return verdicts

        if run.mode == "primal" and case.check.nested:
            verdicts += self._nested_oracles(case, engine, kernel, config, args, outcome)
        elif run.mode == "primal":
            t0 = time.time()
            roots: dict = {}                              # arguments sharing a buffer share it on the device
            result = engine.launch(kernel, config, *[device_view(self.backend, a.value, roots) if a.spec.kind == "array"
                                                     else a.value for a in args], mode="primal")
            self.backend.synchronize()
            outcome.jobs = [j.record() for j in result.jobs]
            outcome.timings["run_s"] = time.time() - t0
            verdicts.append(OracleVerdict("launch", "pass", "primal launch completed"))
        else:
            from .oracles import run_gradient_oracles
            problem = KernelProblem(engine, kernel, config, args)
            t0 = time.time()
            fd = case.check.fd
            rng = np.random.default_rng(case.seed + 1)
            verdicts += run_gradient_oracles(
                problem, run.mode, directions=fd.directions if fd else 1,
                rtol=fd.rtol if fd else None, atol=fd.atol if fd else None,
                dot=case.check.dot, zero_guard=case.check.zero_guard, rng=rng, first=_chosen_shadows(args))
            outcome.timings["oracles_s"] = time.time() - t0
            own = problem.launches.get(run.mode)      # not the other mode's, run by the dot test
            if own is not None:
                outcome.jobs = [j.record() for j in own.jobs]
                if own.plan.source_path:
                    outcome.sources[run.mode] = own.plan.source_path
            verdicts.append(_primal_state_verdict(problem))
            if problem.width > 1:
                verdicts.append(_lane_verdict(problem))
            verdicts += self._activity_and_nondet_oracles(run, problem, engine, args, outcome)
        if case.jobs:
            verdicts.append(check_jobs(case.jobs, outcome.jobs))
        return verdicts


    def _activity_and_nondet_oracles(self, run: Run, problem, engine, args, outcome) -> list[OracleVerdict]:
        """Issue 5: the activity relations (always, where they apply), the `activities: all`
        enumeration and the nondeterminism oracle (when the case asks); see docs/activities.md."""
        from .nondet import nondet_verdict
        from .relations import activities_verdict, relation_verdicts
        case, out = run.case, []
        t0 = time.time()
        out += relation_verdicts(problem, run.mode, rng=np.random.default_rng(case.seed + 2), style=case.launch.style)
        if case.check.activities == "all":
            fd = case.check.fd
            out.append(activities_verdict(problem, run.mode, directions=fd.directions if fd else 1,
                                          rtol=fd.rtol if fd else None, atol=fd.atol if fd else None,
                                          zero_guard=case.check.zero_guard, seed=case.seed))
        outcome.timings["relations_s"] = time.time() - t0
        t0 = time.time()
        nondet = nondet_verdict(problem, run.mode, repeat=case.check.repeat, block_sweep=case.check.block_sweep,
                                case=case, engine=engine, args=args, rng=np.random.default_rng(case.seed + 3))
        if nondet is not None:
            out.append(nondet)
            outcome.timings["nondet_s"] = time.time() - t0
        return out

    def _nested_oracles(self, case, engine, kernel, config, args, outcome) -> list[OracleVerdict]:
        """A kernel that calls autodiff on the device, checked against FD of its own primal."""
        from .nested_problem import NestedProblem
        from .oracles import run_gradient_oracles
        nested = case.check.nested
        pairs = {name: spec["shadow"] for name, spec in nested.get("args", {}).items()}
        problem = NestedProblem(engine, kernel, config, args, pairs, nested.get("mode", "reverse"))
        t0 = time.time()
        fd = case.check.fd
        verdicts = run_gradient_oracles(problem, problem.nested_mode, directions=fd.directions if fd else 2,
                                        rtol=fd.rtol if fd else None, atol=fd.atol if fd else None,
                                        dot=False, zero_guard=case.check.zero_guard,
                                        rng=np.random.default_rng(case.seed + 1))
        outcome.timings["oracles_s"] = time.time() - t0
        if problem.last_launch is not None:
            outcome.jobs = [j.record() for j in problem.last_launch.jobs]
            if problem.last_launch.plan.source_path:
                outcome.sources["primal"] = problem.last_launch.plan.source_path
        return [v for v in verdicts if v.verdict != "skip" or v.name != "dot"]


def _chosen_shadows(args: list[HostArg]) -> dict | None:
    """The case's own shadow values (`shadow: {init: ...}`): the first direction or cotangent the
    gradient oracles check. A batch gives one shadow's worth or all of them; the first is used."""
    from .inputs import init_array
    chosen = {}
    for a in args:
        init = (a.spec.shadow or {}).get("init")
        if init is None:
            continue
        shape = tuple(a.value.shape)
        spec = ArraySpec(shape, "float64", init)
        try:
            chosen[a.spec.name] = init_array(spec, np.random.default_rng(0))
        except ValueError:                    # width x shape values: take the first shadow
            values = np.asarray(init["values"], dtype=np.float64).reshape((-1,) + shape)
            chosen[a.spec.name] = values[0]
    return chosen or None


def _primal_state_verdict(problem: KernelProblem) -> OracleVerdict:
    tol = 1e-5 if problem.dtype == "float32" else 1e-12
    err = problem.primal_state_error
    ok = err <= tol
    return OracleVerdict("primal-state", "pass" if ok else "fail",
                         "derivative launches leave the primal arrays as a primal launch does" if ok else
                         f"derivative launch left primal arrays differing from a primal launch (rel err {err:.3g})",
                         metrics={"max_rel_err": err})


def _lane_verdict(problem: KernelProblem) -> OracleVerdict:
    tol = 1e-5 if problem.dtype == "float32" else 1e-12
    err = problem.lane_error
    ok = err <= tol
    return OracleVerdict("batch-lanes", "pass" if ok else "fail",
                         f"{problem.width} shadow lanes agree with separate directions" if ok else
                         f"batch lanes disagree with lane 0 scaled (rel err {err:.3g})",
                         metrics={"max_rel_err": err, "width": problem.width})
