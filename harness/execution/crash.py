"""The outcome of a run whose process died while running it (an xdist worker that crashed).

pytest-xdist reports the run in flight of a dead worker as failed; the plugin records it with this
outcome, ERROR with the error category `crash`, so the results and the report count it. The case
file is read again for the run's description; when that fails the run id alone is enough.
"""
from __future__ import annotations

from pathlib import Path

from harness.execution.judgement import judge_run
from harness.model import ErrorRecord, Outcome
from harness.policy import State

CRASH_ERROR = "WorkerCrash"
CRASH_CATEGORY = "crash"


def crash_outcome(root: Path, nodeid: str, backend: str, worker: str) -> Outcome:
    source, _, name = nodeid.partition("::")
    message = (f"the process running this run ({worker}) died before the run finished (a crash: "
               "a segfault, os._exit, the out-of-memory killer, ...); pytest-xdist started a fresh worker "
               "for the remaining runs")
    outcome = judge_run(Outcome(run_id=nodeid, case_id=Path(source).stem, source=source, variant=None, mode=name,
                                dtype=None, backend=backend, state=State.ERROR,
                                repro=f"pytest '{nodeid}' --backend {backend}"),
                        lost=(ErrorRecord(CRASH_ERROR, message, category=CRASH_CATEGORY), message))
    try:
        from harness.cases import expand_runs, load_case_file
        for case in load_case_file(Path(root) / source, Path(root)):
            for run in expand_runs(case, backend):
                if run.name == name:
                    outcome.case_id, outcome.variant, outcome.mode, outcome.dtype = (
                        case.id, case.variant, run.mode, run.dtype)
                    outcome.title, outcome.description = case.title, case.description
                    outcome.tags, outcome.links = list(case.tags), list(case.links)
                    outcome.kernel, outcome.expect = str(case.kernel_for(run.engine)), case.expect.kind
                    return outcome
    except Exception:                       # the description is a courtesy; the record is what counts
        pass
    return outcome
