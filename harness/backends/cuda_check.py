"""Can the cuda backend run here? Asked once, before a session collects anything, so a machine
without a GPU, a driver or cupy gets one message instead of a CudaSupportError per run.

The driver is asked directly (libcuda's cuInit and cuDeviceGetCount through ctypes): numba stays
unimported, and the answer is the one numba would get.
"""
from __future__ import annotations

import ctypes
import ctypes.util

# An editable checkout stays editable: `pip install .[gpu]` would replace it with a copy.
GPU_INSTALL_ADVICE = ("install cupy with `pip install -e '.[gpu]'` in a checkout of the harness "
                      "(or `pip install 'gpu-ad-harness[gpu]'` where it is installed from a wheel)")
ELSEWHERE = "without a GPU use --backend sim (numba's simulator) or --backend ptx (compile only)"


def _driver_problem() -> str | None:
    names = ["libcuda.so.1", "libcuda.so", ctypes.util.find_library("cuda")]
    lib = None
    for name in filter(None, names):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return "no CUDA driver found (libcuda.so is not installed or not on the loader's path)"
    status = lib.cuInit(0)
    if status != 0:
        return f"the CUDA driver did not start (cuInit returned {status}: no usable GPU or a driver problem)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return "the CUDA driver sees no GPU"
    return None


def cuda_unavailable_reason(cupy_installed: bool) -> str | None:
    """None when the cuda backend can run; else one message saying why not and what to do."""
    problem = _driver_problem()
    if problem is not None:
        return f"--backend cuda cannot run here: {problem}; {ELSEWHERE}"
    if not cupy_installed:
        return f"--backend cuda needs cupy, which is not installed: {GPU_INSTALL_ADVICE}; {ELSEWHERE}"
    return None
