"""Device-side automatic differentiation, callable inside kernels (Enzyme's autodiff_deferred).

    from harness import autodiff, Reverse, Duplicated

    def df(A, dA):
        autodiff(Reverse, f, Duplicated(A, dA))

The engine compiles such a kernel by generating f's derivative as a device function, a child
compile job that inherits the kernel's target and configuration. `autodiff` itself never runs:
a kernel that calls it must be launched through the engine.
"""
from __future__ import annotations

from harness.core.activity import Active, Const, Duplicated, DuplicatedNoNeed

Forward = "forward"
Reverse = "reverse"

__all__ = ["Active", "Const", "Duplicated", "DuplicatedNoNeed", "Forward", "Reverse", "autodiff"]


def autodiff(mode, f, *args):
    raise RuntimeError("autodiff() inside a kernel must be compiled by the harness engine: "
                       "launch the kernel with `launch` from harness.engine")
