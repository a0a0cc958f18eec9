"""Activity annotations for kernel arguments (Enzyme's vocabulary).

Each kernel argument is wrapped in exactly one of these when it is launched through the engine:
the split-argument launcher gives every argument its own activity. A bare value means `Const`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)
class Const:
    """Not differentiated: no shadow."""
    value: Any


@dataclass(frozen=True, eq=False)
class Duplicated:
    """A differentiable value with one shadow (tangent in forward, cotangent in reverse).

    Arrays carry a shadow array of the same shape. In forward mode a scalar may be Duplicated too:
    its shadow is the scalar tangent.
    """
    value: Any
    shadow: Any


@dataclass(frozen=True, eq=False)
class DuplicatedNoNeed(Duplicated):
    """As Duplicated, but the primal result need not be written."""


@dataclass(frozen=True, eq=False)
class BatchDuplicated:
    """k shadows in one launch; equal to k separate Duplicated launches."""
    value: Any
    shadows: tuple

    @property
    def width(self) -> int:
        return len(self.shadows)


@dataclass(frozen=True, eq=False)
class Active:
    """A differentiable scalar input. Reverse mode returns its adjoint, summed over all threads.

    In forward mode it is seeded like `Duplicated(value, tangent)`.
    """
    value: Any
    tangent: Any = 0.0


ACTIVITY_NAMES = {
    "const": Const,
    "duplicated": Duplicated,
    "duplicated_no_need": DuplicatedNoNeed,
    "batch_duplicated": BatchDuplicated,
    "active": Active,
}


def activity_name(annotation: Any) -> str:
    for name, cls in ACTIVITY_NAMES.items():
        if type(annotation) is cls:
            return name
    return "const"


def unwrap(annotation: Any) -> Any:
    """The primal value of an annotated (or bare) argument."""
    if isinstance(annotation, (Const, Duplicated, BatchDuplicated, Active)):
        return annotation.value
    return annotation


def map_arrays(annotation: Any, f) -> Any:
    """The same annotation with `f` applied to its value and shadows (Const, Duplicated,
    DuplicatedNoNeed, BatchDuplicated); an Active scalar or a bare value comes back as it is."""
    if isinstance(annotation, BatchDuplicated):
        return BatchDuplicated(f(annotation.value), tuple(f(s) for s in annotation.shadows))
    if isinstance(annotation, Duplicated):
        return type(annotation)(f(annotation.value), f(annotation.shadow))
    if isinstance(annotation, Const):
        return Const(f(annotation.value))
    return annotation
