"""GPU AD regression harness.

numba reads NUMBA_ENABLE_CUDASIM once, when it is first imported, so the simulator backend has to
be chosen before that. `HARNESS_BACKEND=sim` in the environment does it here, at the first import
of anything from `harness` (for example `from harness.engine import launch` in a script), so that
numba imported later, also by the script's own kernels, runs on the simulator.
"""
import os as _os
import sys as _sys

if _os.environ.get("HARNESS_BACKEND") == "sim" and "numba" not in _sys.modules:
    _os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
