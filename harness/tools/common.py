"""What the tools share: finding a case or run from what a person types, and running runs.

A CASE is a case file (`cases/relu.yaml`) or a case id (`leaky-relu`, looked up under cases/);
a RUN is `CASE::NAME` with a run name as pytest shows it (`cases/relu.yaml::reverse`). The backend
is chosen before numba is imported (harness.backends), so call `start_backend` first.
"""
from __future__ import annotations

import re
from pathlib import Path

from harness.core.errors import CaseError


class ToolError(Exception):
    """A mistake in what was asked for; the tools print it as one line and exit with status 2."""


def start_backend(name: str | None):
    """The process's backend (must come before anything imports numba)."""
    from harness.backends import get_backend
    return get_backend(name)


def case_file_of(spec: str, root: Path) -> Path:
    """The case file that `spec` (a path or a case id) names."""
    path = Path(spec)
    candidates = [path, root / path] if not path.is_absolute() else [path]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    if path.suffix in (".yaml", ".yml"):
        raise ToolError(f"no case file {spec}")
    pattern = re.compile(rf"^id:\s*['\"]?{re.escape(spec)}['\"]?\s*$", re.MULTILINE)
    found = sorted(p for p in (root / "cases").rglob("*.y*ml") if pattern.search(p.read_text(errors="replace")))
    if not found:
        raise ToolError(f"no case with id '{spec}' under {root / 'cases'} (give the case file's path)")
    if len(found) > 1:
        raise ToolError(f"case id '{spec}' is declared in several files: {', '.join(map(str, found))}")
    return found[0]


def load_runs(spec: str, root: Path, backend: str):
    """(case file, every run of it) for a CASE, or for a RUN the one run it names."""
    from harness.cases import expand_runs, load_case_file
    file_spec, _, run_name = spec.partition("::")
    path = case_file_of(file_spec, root)
    try:
        cases = load_case_file(path, root)
    except CaseError as exc:
        raise ToolError(f"malformed case file: {exc}") from None
    engine = run_name.rpartition("@")[2] if "@" in run_name else None     # an adapter's run: name@warp
    runs = [run for case in cases for run in expand_runs(case, backend, ("bundled",) + ((engine,) if engine else ()))]
    if run_name:
        chosen = [run for run in runs if run.name == run_name]
        if not chosen:
            raise ToolError(f"{path} has no run '{run_name}' (its runs: {', '.join(r.name for r in runs)})")
        runs = chosen
    return path, runs


def project_relative(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
