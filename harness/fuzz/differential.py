"""Differential fuzzing: one generated kernel through the bundled engine, Warp and Taichi.

Each seed's kernel (grammar profile `adapters` when an adapter is fuzzed: the kernels Warp and
Taichi can express) runs in every mode each engine has (Warp has no forward mode: its forward runs
are not generated, harness/cases expand them as the corpus does), judged by the harness's oracles
(finite differences in float64, the dot test, the zero guard), and each adapter's verdict is set
beside the bundled engine's verdict of the same mode and dtype:

  the adapter fails, the bundled engine passes    finite differences side with the bundled engine:
                                                  a finding of the adapter;
  the bundled engine fails, an adapter passes     a finding of the bundled engine;
  both fail, no engine passes                     a finding of each, marked `both fail` (suspect
                                                  the oracle or the generator first);
  both fail, another engine passes                finite differences side with that engine (the
                                                  others are named "wrong too");
  an adapter crashes (any error but a refusal)    a crash finding of the adapter;
  a derivative launch leaves other primal values  a primal-differs finding of that engine: its
  than the primal launch (or than numba's)        derivative kernel's primal or the compiler is
                                                  wrong, and no derivative is judged.

A refusal (UnsupportedError, ActivityError; an adapter's UNSUPPORTED) is counted per engine under
its reason, never a finding. Findings are saved as cases whose `engines:` entry carries that
engine's xfail ("found by fuzzing; not yet reported"), so the saved case passes the suite while
the bug stands and fails (XPASS) once the engine is fixed.
"""
from __future__ import annotations

import time
from pathlib import Path

import yaml

from harness.core.errors import plain_text
from harness.policy import State
from harness.fuzz.campaign import Tally, classify, write_kernel
from harness.fuzz.grammar import FuzzKernel, generate

ADAPTERS = ("warp", "taichi")
# Warp compiles each generated kernel's module at this optimization level (Warp's default is 3): a
# generated kernel runs a few small launches, and 0 compiled 8 of them in 10.0 s where 3 took 18.3 s
# (2 busy cores); the adjoint Warp generates is the same code either way.
WARP_OPTIMIZATION_LEVEL = 0
FOUND_BY_FUZZING = "found by fuzzing; not yet reported"
PROCESS_DIED = "EngineProcessDied"          # the error of an isolated adapter run whose process died


def profile_for(engines) -> str:
    """The grammar profile of a campaign: the adapters' subset as soon as one adapter runs."""
    return "adapters" if set(engines) & set(ADAPTERS) else "bundled"


def judge_seed(results: dict) -> list[tuple]:
    """The findings of one kernel's runs. `results` maps (engine, mode, dtype) to (kind, message,
    run name); returns (engine, run name, kind, message) per finding, by the rules above."""
    found = []
    for (engine, mode, dtype), (kind, message, name) in results.items():
        if kind in ("pass", "refusal", "inconclusive"):
            continue
        if kind in ("crash", "primal-differs"):     # judged on its own, not against the other engines
            found.append((engine, name, kind, message))
            continue
        others = {e: r[0] for (e, m, d), r in results.items() if (m, d) == (mode, dtype) and e != engine}
        wrong_too = sorted(e for e, k in others.items() if k == "wrong-gradient")
        siding = sorted(e for e, k in others.items() if k == "pass")
        if siding:         # another engine passes: the oracle is not the suspect, whoever else fails
            why = f"finite differences side with {', '.join(siding)}" + \
                (f" ({', '.join(wrong_too)} wrong too)" if wrong_too else "")
        elif wrong_too:
            why = f"both fail ({', '.join(wrong_too)} too)"
        else:
            why = "finite differences alone judge it (no other engine ran this mode)"
        found.append((engine, name, "wrong-gradient", f"{why}: {message}"))
    return found


class DifferentialFuzzer:
    """Runs seeds through several engines in this process (the simulator, or the cuda backend)."""

    def __init__(self, work: Path, findings: Path, engines=("bundled",) + ADAPTERS, backend: str = "sim",
                 timeout_s: float = 120.0, profile: str | None = None):
        from harness.backends import get_backend
        get_backend(backend)                          # before anything imports numba
        from harness.execution.runner import Runner
        self.engines, self.backend = tuple(engines), backend
        self.profile = profile or profile_for(engines)
        self.work, self.findings = Path(work), Path(findings)
        self.work.mkdir(parents=True, exist_ok=True)
        self.runner = Runner(self.work, backend, timeout_s=timeout_s)
        if "warp" in self.engines:
            self.runner.engine({}, "warp").optimization_level = WARP_OPTIMIZATION_LEVEL

    def run_seed(self, seed: int) -> Tally:
        from harness.cases import expand_runs, load_case_file
        tally = Tally(kernels=1)
        fk = generate(seed, self.profile)
        tally.features.update(fk.features)
        name = f"fz_{seed}"
        path = write_kernel(self.work, fk, name)
        started = time.time()
        try:
            cases = load_case_file(path, self.work)
        except Exception as exc:                      # the generator wrote a case the loader refuses
            self._save(fk, seed, "bundled", "load", "crash", f"{type(exc).__name__}: {exc}", tally)
            return tally
        results = {}
        for case in cases:
            for run in expand_runs(case, self.backend, self.engines):
                outcome = self.runner.execute(run)
                tally.runs += 1
                kind, why = classify(outcome)
                if kind == "crash" and outcome.state == State.UNSUPPORTED:    # an adapter's refusal
                    kind, why = "refusal", _reason(why)
                tally.engine_runs[f"{run.engine} {kind}"] += 1
                results[(run.engine, run.mode, run.dtype)] = (kind, why, run.name)
                if kind == "pass":
                    tally.passes += 1
                elif kind == "refusal":
                    tally.refusals[f"{run.engine}: {why}"] += 1
                elif kind == "inconclusive":
                    tally.inconclusive.append((seed, run.name, why[:300]))
        for engine, run_name, kind, message in judge_seed(results):
            self._save(fk, seed, engine, run_name, kind, message, tally)
        tally.seconds = time.time() - started
        return tally

    def _save(self, fk: FuzzKernel, seed: int, engine: str, run_name: str, kind: str, message: str, tally: Tally):
        name = f"fuzz-{seed}-{engine}-{kind}"
        self.findings.mkdir(parents=True, exist_ok=True)
        case = write_kernel(self.findings, fk, name)
        doc = yaml.safe_load(case.read_text())
        doc["description"] = (f"Generated by `harness fuzz --engine {','.join(self.engines)} --seed {seed} --count 1` "
                              f"(grammar profile {fk.profile}). Found: {run_name}: {plain_text(message)[:400]}")
        doc["tags"] = ["fuzz", f"fuzz-{engine}"]
        if engine != "bundled":
            doc["engines"] = {engine: {"expect": found_by_fuzzing(engine, message)}}
        case.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120))
        tally.findings.append((seed, run_name, kind, message, str(case)))


def found_by_fuzzing(engine: str, message: str) -> dict:
    """A saved finding's expectation for its engine: an xfail, which runs in a process of its own
    (`crash: true`) when the finding is that engine's process dying."""
    xfail = {"reason": f"{system_name(engine)}: {FOUND_BY_FUZZING}"}
    if PROCESS_DIED in message:
        xfail["crash"] = True
    return {"xfail": xfail}


def system_name(engine: str) -> str:
    from harness import adapters as engines
    return {"warp": "Warp", "taichi": "Taichi"}.get(engine, engine) + " " + engines.version(engine)


def _reason(message: str) -> str:
    from harness.fuzz.campaign import refusal_reason
    return refusal_reason(message.removeprefix("UnsupportedError: "))


def run_seeds(seeds, work: Path, findings: Path, engines, backend: str = "sim", progress=None,
              log: Path | None = None) -> Tally:
    """`campaign.run_seeds` for several engines: one JSON line per kernel in `log`."""
    from harness.fuzz import campaign
    return campaign.run_seeds(seeds, work, findings, progress, log, DifferentialFuzzer(work, findings, engines, backend))
