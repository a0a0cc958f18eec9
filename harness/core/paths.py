"""Where the harness keeps the files it writes: one definition of each folder, used everywhere.

- generated sources: the bundled engine's kernels (and the backends' shared copies), content
  addressed; `$HARNESS_CACHE_DIR`, else `.cache/harness/generated` under the working directory;
- adapters' sources: the Warp and Taichi translations, in `<generated sources>/<system>/`;
- the case-load cache and the compile locks: beside the generated sources (`../cases`, `../locks`);
- reduction: `harness reduce`'s candidates under `<project>/.cache/harness/reduce/`, and the
  reduced kernels and cases it writes, by default `cases/reduced/`.

Readers (the report, `harness show`) find a generated file by its name in `generated_source_dirs`,
which lists the same folders, so a file one part writes is the file another part looks for.
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "HARNESS_CACHE_DIR"
GENERATED = Path(".cache") / "harness" / "generated"       # relative to the working directory or a project
REDUCE_WORK = Path(".cache") / "harness" / "reduce"        # relative to the project root
REDUCED_CASES = Path("cases") / "reduced"
# The adapters' systems, each writing its translations into a subfolder of the generated sources.
ADAPTER_SYSTEMS = ("warp", "taichi")


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def generated_dir() -> Path:
    """The generated-sources folder of this process (created)."""
    root = os.environ.get(CACHE_ENV)
    return _made(Path(root) if root else Path.cwd() / GENERATED)


def adapter_sources_dir(system: str) -> Path:
    """Where the `system` adapter (warp, taichi) writes its translated kernels (created)."""
    return _made(generated_dir() / system)


def case_load_cache_dir() -> Path:
    return _made(generated_dir().parent / "cases")


def locks_dir() -> Path:
    return _made(generated_dir().parent / "locks")


def reduce_work_dir(project: Path) -> Path:
    return Path(project) / REDUCE_WORK


def generated_source_dirs(roots) -> list[Path]:
    """Every folder a generated source named in a run record may be in, without creating any:
    $HARNESS_CACHE_DIR, else each project root's generated sources, each with its adapters'
    subfolders."""
    env = os.environ.get(CACHE_ENV)
    bases = ([Path(env)] if env else []) + [Path(root) / GENERATED for root in roots]
    return [d for base in bases for d in (base, *(base / s for s in ADAPTER_SYSTEMS))]
