"""Plain records the engine produces and the harness stores: modes and compile-job records."""
from __future__ import annotations

from dataclasses import dataclass, field

MODES = ("primal", "forward", "reverse")


@dataclass
class JobRecord:
    """One compilation the engine performed (a node of the job tree), as results files store it."""
    id: int
    function: str
    mode: str                       # primal | forward | reverse
    target: str                     # cuda | sim | host
    config: dict = field(default_factory=dict)
    parent: int | None = None
    parent_function: str | None = None
    kernel: bool = True
    source: str | None = None       # path of the generated source, if any
