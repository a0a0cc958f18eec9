"""A harness session: the backend, the runner with its engines (and their plan caches) and the
kernel launchers of one pytest session, `harness run` or campaign process. The pytest plugin keeps
its session in `config.stash`; nothing is kept in module globals, so several sessions can live in
one process (each with its own engines and caches; the backend is process-wide because numba's
simulator and real compilation cannot share a process)."""
from __future__ import annotations

from pathlib import Path

from harness.model import Outcome, Run


class Session:
    def __init__(self, root: Path, backend_name: str | None = None, *, seams=None, timeout_s: float | None = None):
        from harness.execution.runner import Runner
        self.root = Path(root)
        self.runner = Runner(self.root, backend_name, timeout_s, seams=seams)

    @property
    def backend(self):
        return self.runner.backend

    def execute(self, run: Run) -> Outcome:
        return self.runner.execute(run)
