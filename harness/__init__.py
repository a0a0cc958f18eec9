"""GPU AD regression harness.

numba reads NUMBA_ENABLE_CUDASIM once, when it is first imported, so the simulator backend has to
be chosen before that. `HARNESS_BACKEND=sim` in the environment does it here, at the first import
of anything from `harness` (for example `from harness.engine import launch` in a script), so that
numba imported later, also by the script's own kernels, runs on the simulator.
"""
import os as _os
import sys as _sys

# Kept for the message of a backend that cannot be used any more (harness.backends.import_order): what
# went wrong depends on whether numba came first.
NUMBA_IMPORTED_FIRST = "numba" in _sys.modules
SIMULATOR_SET_AT_IMPORT = _os.environ.get("HARNESS_BACKEND") == "sim" and not NUMBA_IMPORTED_FIRST

if SIMULATOR_SET_AT_IMPORT:
    _os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
