"""Execute one Run: build its arguments, launch through the engine, apply the oracles, and judge
the result against the case's expectation (harness/execution/judgement.py: judge_run, the one place a run's
state is decided). Always returns an Outcome; never raises for a bad run.

What is launched and which oracles apply is the run strategy's job (harness/execution/strategies/: compile-only,
nested, primal, gradient); the runner sets the run up, times it, catches its errors and judges it.
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from harness.backends import get_backend, run_timeout_from_env
from harness.cases.expand import apply_dtype
from harness.engine.runtime.launch import Engine, EngineOptions, LaunchConfig
from harness.engine.seams import default_seams
from harness.execution.engine_warnings import kept_in
from harness.adapters import version as engine_version
from harness.adapters.isolation import OUTCOME_MARK, isolate_engine_runs
from harness.core.errors import KernelFaultError, LaunchTimeoutError, UnsupportedError
from harness.cases.inputs import HostArg, build_args, load_kernel
from harness.execution.tracebacks import format_both_ends
from harness.model import ErrorRecord, OracleVerdict, Outcome, Run
from harness.execution.strategies import RunContext, strategy_for
from harness.execution.judgement import judge_run
from harness.policy import GPU_SCALE_REASON, GPU_SCALE_TAG, State
from harness.execution.verdicts import check_jobs


def launch_config(case, args: list[HostArg]) -> LaunchConfig:
    spec = case.launch
    if spec.threads:
        return LaunchConfig.threads(spec.threads if len(spec.threads) > 1 else spec.threads[0],
                                    spec.block if spec.block else 128)
    if spec.grid and spec.block:
        return LaunchConfig.of(spec.grid, spec.block)
    raise UnsupportedError(f"launch style '{spec.style}' needs threads or grid and block")


def repro_command(run: Run) -> str:
    engine = f" --engine {run.engine}" if run.engine != "bundled" else ""
    return f"pytest '{run.run_id}' --backend {run.backend}{engine}"


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


def child_environment() -> dict:
    """This process's environment for a child that runs a case, with this harness first on its path:
    the child's working folder is the case root, where a relative PYTHONPATH (`PYTHONPATH=.`, as the
    harness is run from a checkout) no longer finds the harness."""
    import os
    import harness
    here = str(Path(harness.__file__).resolve().parents[1])
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([here] + [str(Path(p).resolve()) for p in rest])}


class Runner:
    def __init__(self, root: Path, backend_name: str | None = None, timeout_s: float | None = None,
                 seams=None):
        """`seams`: the engine parts every engine of this runner is built with (harness/engine/seams.py;
        the mutation self-test passes a mutant's), the defaults when None."""
        self.root = Path(root)
        self.timeout_s = run_timeout_from_env() if timeout_s is None else timeout_s
        self.backend = get_backend(backend_name)
        self._engines: dict[tuple, Engine] = {}
        self.seams = seams

    def engine(self, options: dict, name: str = "bundled"):
        """The engine that runs a case (harness/adapters): the bundled one with the case's options,
        or an adapter."""
        key = (name,) + tuple(sorted(options.items()))
        if key not in self._engines:
            if name == "bundled":
                seams = self.seams or default_seams()
                self._engines[key] = Engine(self.backend, EngineOptions.from_dict(options, seams.option_defaults), seams)
            else:
                from harness.adapters import create
                self._engines[key] = create(name, self.backend)
        return self._engines[key]

    def execute(self, run: Run, isolate: bool = True) -> Outcome:
        """Run and judge `run` against the expectation it carries (cases/expand.py: for_run)."""
        if run.skip or (run.engine != "bundled" and not self.backend.can_launch):
            return judge_run(self.new_outcome(run, time.time()),
                             skip=run.skip or f"the {self.backend.name} tier compiles the bundled engine's kernels only")
        if self.backend.name == "sim" and GPU_SCALE_TAG in run.case.tags:
            return judge_run(self.new_outcome(run, time.time()), skip=GPU_SCALE_REASON)
        if isolate and self.backend.name == "cuda" and run.case.expect.error_type == "KernelFaultError":
            return self.execute_isolated(run)
        if isolate and run.case.expect.kind == "xfail" and run.case.expect.crash:
            return self.execute_isolated(run)            # a known crash must not take this process with it
        if isolate and run.engine != "bundled" and isolate_engine_runs(self.backend.name):
            return self.execute_isolated(run)            # a fault in Warp or Taichi is sticky (adapters/isolation.py)
        case = run.case
        started = time.time()
        outcome = self.new_outcome(run, started)
        verdicts: list[OracleVerdict] = []
        error = None
        try:
            if self.backend.poisoned:
                raise KernelFaultError("not run: " + getattr(
                    self.backend, "poisoned_reason", "an earlier kernel fault left this process's CUDA context "
                    "unusable (run with -n so a fresh worker takes over)"))
            with time_limit(self.timeout_s, run.run_id), kept_in(run.engine, outcome.engine_warnings):
                verdicts = self._execute(run, outcome)
        except Exception as exc:            # every failure of a run is that run's result alone
            error = exc
            outcome.error = ErrorRecord(type(exc).__name__, str(exc), traceback=format_both_ends(exc))
        outcome.oracles = verdicts
        judge_run(outcome, case.expect, run.engine, self.backend.can_launch, verdicts=verdicts, error=error)
        outcome.duration = time.time() - started
        return outcome

    def new_outcome(self, run: Run, started: float = 0.0) -> Outcome:
        """An outcome carrying the run's identity and the case's description, not yet judged."""
        case = run.case
        return Outcome(run_id=run.run_id, case_id=case.id, source=case.source, variant=case.variant,
                       mode=run.mode, dtype=run.dtype, backend=self.backend.name, state=State.PASS,
                       expect=case.expect.kind, title=case.title, description=case.description,
                       tags=list(case.tags), links=list(case.links), kernel=str(case.kernel_for(run.engine)),
                       repro=repro_command(run), started=started, engine=run.engine,
                       engine_version=engine_version(run.engine))

    def execute_isolated(self, run: Run) -> Outcome:
        """A run in a fresh process (one expected to fault, or an adapter's run on a GPU): a fault
        cannot poison this one's context."""
        import json
        import subprocess
        import sys
        cmd = [sys.executable, "-m", "harness.execution.isolated", str(self.root), str(self.root / run.case.source),
               run.name, self.backend.name]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout_s or None,
                                  cwd=self.root, env=child_environment())
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith(OUTCOME_MARK)]
            if not lines and (run.engine != "bundled" or run.case.expect.crash) and done.returncode < 0:
                return judge_run(self.new_outcome(run, time.time()), run.case.expect, run.engine,   # killed by a signal
                                 self.backend.can_launch, death=(done.returncode, done.stderr))
            if not lines and not done.stdout.strip():
                raise RuntimeError(f"exit status {done.returncode}, no result; stderr ends: {done.stderr[-600:]}")
            return Outcome.from_json(json.loads(lines[-1][len(OUTCOME_MARK):] if lines else
                                                done.stdout.strip().splitlines()[-1]))
        except Exception as exc:              # the child died or printed nothing usable
            lost = ErrorRecord(type(exc).__name__, f"isolated run failed: {exc}")
            return judge_run(self.new_outcome(run), lost=(lost, lost.message))

    # ------------------------------------------------------------------ internals
    def _execute(self, run: Run, outcome: Outcome) -> list[OracleVerdict]:
        ctx = self.context(run, outcome)
        verdicts = strategy_for(run, self.backend.can_launch).verdicts(ctx)
        if run.case.jobs and run.engine == "bundled":     # compile-job trees are the bundled engine's
            verdicts.append(check_jobs(run.case.jobs, outcome.jobs))
        return verdicts

    def context(self, run: Run, outcome: Outcome) -> RunContext:
        """Build the run's arguments, engine (or broadcast/map launcher) and launch configuration."""
        case = run.case
        t0 = time.time()
        specs = apply_dtype(case, run.dtype)
        kernel = load_kernel(case.kernel_for(run.engine), self.root)
        args = build_args(specs, case.seed, self.root)
        outcome.args = [{"name": a.spec.name, "kind": a.spec.kind, "activity": a.spec.activity,
                         "shape": list(np.shape(a.value)) if a.spec.kind == "array" else [],
                         "dtype": str(getattr(a.value, "dtype", a.spec.dtype or ""))} for a in args]
        engine = self.engine(case.engine, run.engine)
        if case.launch.style in ("broadcast", "map") and run.engine != "bundled":
            raise UnsupportedError(f"the {case.launch.style} front end generates its kernel for the bundled engine; "
                                   f"the {run.engine} adapter translates kernel-style cases only")
        if (case.program is not None or case.replay is not None) and run.engine != "bundled":
            raise UnsupportedError(f"programs and the replay protocol run through the bundled engine; the "
                                   f"{run.engine} adapter runs single kernel launches only")
        if case.program is not None:                      # each launch of a program has its own config
            config = None
        elif case.launch.style in ("broadcast", "map"):     # the front end generates the kernel around f
            from harness.broadcast.frontend import launcher_for
            engine = launcher_for(engine, case.launch.style, [a.spec.name for a in args])
            config = engine.config_for(args[0].value, case.launch.block)
        else:
            config = launch_config(case, args)
        outcome.timings["setup_s"] = time.time() - t0
        return RunContext(run, self.backend, engine, kernel, config, args, outcome, root=self.root)
