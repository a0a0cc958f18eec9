"""AD engines behind one interface (harness/adapters/base.py): the bundled engine and adapters for
NVIDIA Warp and Taichi. `create(name, backend, options)` gives an engine; `version(name)` its
version for the run records without starting it.

Other packages add engines without editing the harness, through the entry-point group
`gpu_ad_harness.engines` (docs/engines.md, "An adapter in its own package"): the entry point's name
is the engine's name (`--engine NAME`), its value a callable `factory(backend)` returning an object
with the AdEngine interface. The entry points are read when an unknown name is asked for, so a
session that uses only the built-in engines never imports another package.
"""
from __future__ import annotations

from importlib import metadata

BUILT_IN = ("bundled", "warp", "taichi")
ENGINES = BUILT_IN           # kept for callers that list the built-in engines
DEFAULT = "bundled"
ENTRY_POINT_GROUP = "gpu_ad_harness.engines"
_DISTRIBUTIONS = {"bundled": "gpu-ad-harness", "warp": "warp-lang", "taichi": "taichi"}


def _entry_points() -> dict:
    """Engines other packages registered: name -> entry point (built-in names cannot be replaced)."""
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILT_IN}


def available() -> list[str]:
    return [*BUILT_IN, *sorted(_entry_points())]


def parse_engines(value: str | None) -> list[str]:
    """'bundled,warp' -> ['bundled', 'warp']; a clear error naming the unknown one."""
    names = [n.strip() for n in (value or DEFAULT).split(",") if n.strip()]
    known = set(BUILT_IN) if all(n in BUILT_IN for n in names) else set(available())
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise ValueError(f"unknown engine {', '.join(bad) or repr(value)}: choose from {', '.join(available())} "
                         f"(other packages add engines through the entry-point group {ENTRY_POINT_GROUP})")
    return list(dict.fromkeys(names))


def version(name: str) -> str:
    if name not in BUILT_IN:
        ep = _entry_points().get(name)
        dist = getattr(ep, "dist", None)
        return dist.version if dist is not None else "not installed"
    try:
        return metadata.version(_DISTRIBUTIONS[name])
    except metadata.PackageNotFoundError:
        return "not installed"


def create(name: str, backend, options: dict | None = None):
    """An engine for `backend`. Engine options (`engine:` in a case) belong to the bundled engine."""
    if name == "bundled":
        from harness.engine.runtime.launch import Engine, EngineOptions
        engine = Engine(backend, EngineOptions.from_dict(options))
        return engine
    if options:
        raise ValueError(f"engine options {sorted(options)} belong to the bundled engine, not {name}")
    if name == "warp":
        from harness.adapters.warp_adapter import WarpAdapter
        return WarpAdapter(backend)
    if name == "taichi":
        from harness.adapters.taichi_adapter import TaichiAdapter
        return TaichiAdapter(backend)
    ep = _entry_points().get(name)
    if ep is not None:
        return ep.load()(backend)
    raise ValueError(f"unknown engine {name!r}")
