"""Device-side automatic differentiation (defined in harness/engine/device.py); kernels import it
from here: `from harness import autodiff, Reverse, Duplicated`."""
from harness.engine.device import (  # noqa: F401
    Active, Const, Duplicated, DuplicatedNoNeed, Forward, Reverse, __all__, autodiff,
)
