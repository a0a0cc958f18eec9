"""Generated kernels are real files named by a hash of their content, written once, never rewritten.

Real files give numba's on-disk cache, the simulator (which identifies shared arrays by file and
line), tracebacks and debuggers something to point at.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

from harness.core.paths import generated_dir

# process-wide: generated files are named by a hash of their text, so a path names one function forever
_loaded: dict[str, object] = {}


def cache_dir() -> Path:
    return generated_dir()         # harness/core/paths.py owns the folder


def write_module(stem: str, source: str, folder: Path | None = None) -> Path:
    """`<folder>/<stem>_<digest>.py` (default: the generated-sources folder), written once."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = (folder or cache_dir()) / f"{stem}_{digest}.py"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)           # atomic: concurrent writers produce the same bytes
    return path


def load_function(path: Path, name: str):
    key = f"{path}:{name}"
    if key not in _loaded:
        spec = importlib.util.spec_from_file_location(f"harness_generated.{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[key] = getattr(module, name)
    return _loaded[key]
