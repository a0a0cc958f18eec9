"""`numba.cuda.grid(1)` spelled through the numba package, for numba's CUDA simulator.

The simulator runs a kernel with every global bound to the `numba.cuda` module swapped for its
per-launch fake module (thread indices, barriers, shared arrays), but leaves a global bound to
the `numba` package alone, so a kernel written after `import numba.cuda` as `numba.cuda.grid(1)`
or `numba.cuda.threadIdx.x` (a common spelling in tutorials) reaches the real module, which under
the simulator has none of them. On a GPU numba resolves both spellings to the same intrinsics.
Here the `numba` global is swapped too, for the duration of the launch, with a stand-in whose
`cuda` is the fake module and whose every other attribute is numba's own.
"""
from __future__ import annotations

import contextlib
import threading
import types
from collections import defaultdict

_lock = threading.Lock()
_depth: dict[int, int] = defaultdict(int)
_saved: dict[int, dict] = {}


class _NumbaWithFakeCuda(types.ModuleType):
    def __init__(self, numba, fake_cuda):
        super().__init__(numba.__name__)
        self._numba = numba
        self.cuda = fake_cuda

    def __getattr__(self, name):
        return getattr(self._numba, name)


def install() -> None:
    import numba
    from numba.cuda.simulator import kernel
    original = kernel.swapped_cuda_module
    if getattr(original, "_harness", False):
        return

    @contextlib.contextmanager
    def swapped(fn, fake_cuda):
        globs = fn.__globals__
        key = id(globs)
        with original(fn, fake_cuda):
            with _lock:                    # every simulated thread enters for its device calls
                if _depth[key] == 0:
                    _saved[key] = {k: v for k, v in globs.items() if v is numba}
                    for k in _saved[key]:
                        globs[k] = _NumbaWithFakeCuda(numba, fake_cuda)
                _depth[key] += 1
            try:
                yield
            finally:
                with _lock:
                    _depth[key] -= 1
                    if _depth[key] == 0:
                        globs.update(_saved.pop(key))
    swapped._harness = True
    kernel.swapped_cuda_module = swapped
