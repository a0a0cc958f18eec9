"""`@cuda.jit(launch_bounds=..., lineinfo=...)` under numba's CUDA simulator.

numba.cuda's `jit` takes options that tell the compiler how to build the kernel without changing
what it computes: `launch_bounds` (the most threads per block a launch will use, a register
budget hint), `max_registers` (a register cap, PyLops' non-stationary convolutions set it),
`lineinfo`, `forceinline`, `lto`. The simulator's `jit` lacks them and raises
TypeError at the decorator, so a kernel published with one cannot even be imported on the
simulator. Here the simulator's `jit` accepts them and leaves them out. (A launch larger than
`launch_bounds` fails on a GPU; the simulator's launch checks of sim_block.py do not model it.)
"""
from __future__ import annotations

import functools

# numba.cuda.jit's build options that do not change a kernel's meaning
BUILD_ONLY = ("launch_bounds", "max_registers", "lineinfo", "forceinline", "lto")


def install() -> None:
    from numba import cuda
    from numba.cuda.simulator import api
    original = api.jit
    if getattr(original, "_harness", False):
        return

    @functools.wraps(original)
    def jit(*args, **kwargs):
        for name in BUILD_ONLY:
            kwargs.pop(name, None)
        return original(*args, **kwargs)
    jit._harness = True
    api.jit = jit
    cuda.jit = jit
