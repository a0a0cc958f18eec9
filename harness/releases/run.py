"""The corpus through one engine release, in a child process that imports that release.

The child is an ordinary `pytest cases --backend sim --engine ENGINE` session (the CPU backends
of Warp and Taichi), with the release's folder first on PYTHONPATH and its results written to
`reports/releases/<engine>/<version>.jsonl`. Which release the child really imported is read back
from its run records (`engine_version`): a release that imported something else is reported, not
silently counted as the one asked for.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.results.store import read_results
from harness.releases.envs import ReleaseEnv


@dataclass
class ReleaseRun:
    engine: str
    version: str
    results: Path
    returncode: int
    imported: set          # engine_version values the run records carry
    tail: str              # the child's last lines, for a release that did not run

    @property
    def problem(self) -> str | None:
        """Why this release's results do not describe it, or None."""
        if not self.results.is_file():
            return f"no results (exit status {self.returncode}): {self.tail}"
        if self.imported and self.imported != {self.version}:
            return f"the child imported {', '.join(sorted(self.imported))}, not {self.version}"
        return None


def results_path(project: Path, engine: str, version: str) -> Path:
    return project / "reports" / "releases" / engine / f"{version}.jsonl"


def run_release(env: ReleaseEnv, project: Path, selection: list[str], jobs: int = 1,
                reuse: bool = False, extra: list[str] | None = None, out: Path | None = None) -> ReleaseRun:
    """Run `selection` (case files, node ids, or `cases`) through `env`'s release; its results go to
    `out` (default: results_path)."""
    out = out or results_path(project, env.engine, env.version)
    if reuse and out.is_file():
        return _read_back(env, out, 0, "")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", *(selection or ["cases"]), "--backend", "sim",
           "--engine", env.engine, "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
           "--results", str(out), "-n", str(max(jobs, 1)), *(extra or [])]
    child_env = {**os.environ, "PYTHONPATH": env.pythonpath(str(project), os.environ.get("PYTHONPATH", "")),
                 "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(cmd, cwd=project, env=child_env, capture_output=True, text=True)
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
    return _read_back(env, out, proc.returncode, tail)


def _read_back(env: ReleaseEnv, out: Path, returncode: int, tail: str) -> ReleaseRun:
    imported = set()
    if out.is_file():
        _, outcomes = read_results(out)
        imported = {o.engine_version for o in outcomes if o.engine == env.engine and o.engine_version}
    return ReleaseRun(env.engine, env.version, out, returncode, imported, tail)
