"""The engine interface: what the runner and the oracles need from an AD engine.

An engine differentiates one kernel launch with split, individually annotated arguments:

    result = engine.launch(kernel, config, Duplicated(out, dout), Const(x), Active(a), mode="reverse")

- `mode` is primal | forward | reverse, with the semantics of docs/engine.md:
  forward leaves J v in the shadows; reverse takes the final state's cotangent in the shadows and
  leaves J^T w there (unwritten arrays accumulate, overwritten elements are consumed); the primal
  arrays end as after a primal launch.
- `result.adjoints[name]` is the adjoint of each Active scalar (reverse), summed over the threads.
- `result.plan.source_path` names the generated source (a readable file), `result.jobs` the compile
  jobs (empty for engines that do not record any).
- A construct or activity the engine cannot express raises `UnsupportedError` with the reason; an
  activity that cannot apply to an argument raises `ActivityError` (the same checks for every
  engine: they are the launch contract, not an engine's feature).

`name`, `version` and `backend` identify the engine in every run record. The bundled engine
(harness/engine) implements this directly; adapters (Warp, Taichi) translate the kernel into their
system and map the annotations onto it (harness/adapters/adapter.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class AdEngine(Protocol):
    name: str
    version: str
    backend: Any

    def launch(self, kernel, config, *args, mode: str = "primal") -> Any: ...


@dataclass
class AdapterPlan:
    """What an adapter built for one launch signature."""
    mode: str
    source_path: str | None = None
    function: str = ""


@dataclass
class AdapterResult:
    adjoints: dict = field(default_factory=dict)
    plan: AdapterPlan | None = None

    @property
    def jobs(self) -> list:
        return []
