"""What the engine needs of a backend (compile, launch, arrays in and out) and the configuration a
compile job is built for. harness/backends implements it; the engine sees only this interface.

The engine's module-level `launch` and an `Engine()` without a backend use the default backend:
whatever the application registered with `set_default_backend` (harness/backends registers its
process-wide backend when imported).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

_default_factory: Callable[[], "Backend"] | None = None   # process-wide, as the backend it makes is


def set_default_backend(factory: Callable[[], "Backend"]) -> None:
    global _default_factory
    _default_factory = factory


def default_backend() -> "Backend":
    if _default_factory is None:
        raise RuntimeError("no backend: pass one (Engine(backend)) or import harness.backends, which "
                           "registers the harness's backends as the default")
    return _default_factory()


@dataclass(frozen=True)
class TargetConfig:
    """The configuration a compile job is built for; nested jobs must inherit all of it."""
    target: str                       # cuda | sim | host
    compute_capability: tuple[int, int] | None = None
    fastmath: bool = False
    debug: bool = False
    extra: tuple = field(default_factory=tuple)

    def as_dict(self) -> dict:
        return {"target": self.target,
                "compute_capability": list(self.compute_capability) if self.compute_capability else None,
                "fastmath": self.fastmath, "debug": self.debug}


class Backend:
    name = "base"
    can_launch = True
    negative_strides = True     # whether a launch can pass an array view with a negative stride

    def config(self, fastmath: bool = False, debug: bool = False) -> TargetConfig:
        raise NotImplementedError

    # arrays
    def asarray(self, host: np.ndarray):
        """A device copy of a host array (views keep their strides where the backend can)."""
        raise NotImplementedError

    def to_host(self, arr) -> np.ndarray:
        raise NotImplementedError

    def is_array(self, value) -> bool:
        raise NotImplementedError

    def zeros(self, shape, dtype):
        return self.asarray(np.zeros(shape, dtype))

    # kernels
    def compile(self, pyfunc, signature, config: TargetConfig):
        """A launchable kernel (or, for the ptx backend, the PTX text)."""
        raise NotImplementedError

    def launch(self, compiled, grid: tuple, block: tuple, args: list) -> None:
        raise NotImplementedError

    def prepare_launch(self, compiled, grid: tuple, block: tuple, args: list):
        """A callable that enqueues this launch again and again with the same arguments (a backend
        may pack the arguments once here; the default just launches)."""
        return lambda: self.launch(compiled, grid, block, args)

    def synchronize(self) -> None:
        pass

    def multiprocessors(self) -> int | None:
        """The device's multiprocessor count (None: no device; coarsen.py then uses a small grid)."""
        return None

    def resident_blocks(self, compiled, block: tuple) -> int | None:
        """How many blocks of `compiled` fit on the device at once (its occupancy), None if unknown."""
        return None

    def fault_of(self, exc: BaseException) -> str | None:
        """A description when `exc` means the kernel itself faulted, else None."""
        return None

    @property
    def poisoned(self) -> bool:
        """True when an earlier fault left the device unusable in this process."""
        return False
