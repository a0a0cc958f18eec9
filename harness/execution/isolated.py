"""Run one case run in a process of its own and print its outcome as JSON.

Used for runs expected to fault on a real GPU, and for the Warp and Taichi adapters' runs there
(harness/adapters/isolation.py): a fault leaves the faulting process's CUDA context unusable, so such
a run must not share a process with the rest of the suite. An adapter's run is named with its
engine (`reverse-float32@warp`).

    python -m harness.execution.isolated ROOT CASE_FILE RUN_NAME BACKEND
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from harness.adapters.isolation import OUTCOME_MARK


def main(argv: list[str]) -> int:
    root, case_file, run_name, backend = argv
    from harness.backends import get_backend
    get_backend(backend)                      # before anything imports numba
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    engines = (run_name.rpartition("@")[2],) if "@" in run_name else ("bundled",)
    for case in load_case_file(Path(case_file), Path(root)):
        for run in expand_runs(case, backend, engines):
            if run.name == run_name:
                outcome = Runner(Path(root), backend).execute(run, isolate=False)
                print(OUTCOME_MARK + json.dumps(outcome.to_json()), flush=True)
                sys.stderr.flush()
                # no interpreter teardown: after a device fault Taichi's and Warp's exit handlers abort
                os._exit(0)
    print(f"no run {run_name} in {case_file}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
