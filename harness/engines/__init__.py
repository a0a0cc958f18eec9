"""AD engines behind one interface (harness/engines/base.py): the bundled engine and adapters for
NVIDIA Warp and Taichi. `create(name, backend, options)` gives an engine; `version(name)` its
version for the run records without starting it."""
from __future__ import annotations

from importlib import metadata

ENGINES = ("bundled", "warp", "taichi")
DEFAULT = "bundled"
_DISTRIBUTIONS = {"bundled": "gpu-ad-harness", "warp": "warp-lang", "taichi": "taichi"}


def parse_engines(value: str | None) -> list[str]:
    """'bundled,warp' -> ['bundled', 'warp']; a clear error naming the unknown one."""
    names = [n.strip() for n in (value or DEFAULT).split(",") if n.strip()]
    bad = [n for n in names if n not in ENGINES]
    if bad or not names:
        raise ValueError(f"unknown engine {', '.join(bad) or repr(value)}: choose from {', '.join(ENGINES)}")
    return list(dict.fromkeys(names))


def version(name: str) -> str:
    try:
        return metadata.version(_DISTRIBUTIONS[name])
    except metadata.PackageNotFoundError:
        return "not installed"


def create(name: str, backend, options: dict | None = None):
    """An engine for `backend`. Engine options (`engine:` in a case) belong to the bundled engine."""
    if name == "bundled":
        from ..engine.launch import Engine, EngineOptions
        engine = Engine(backend, EngineOptions.from_dict(options))
        return engine
    if options:
        raise ValueError(f"engine options {sorted(options)} belong to the bundled engine, not {name}")
    if name == "warp":
        from .warp_adapter import WarpAdapter
        return WarpAdapter(backend)
    if name == "taichi":
        from .taichi_adapter import TaichiAdapter
        return TaichiAdapter(backend)
    raise ValueError(f"unknown engine {name!r}")
