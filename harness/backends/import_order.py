"""Why a backend cannot be used in this process, said for the situation at hand.

numba reads NUMBA_ENABLE_CUDASIM once, at its first import, so a process runs either the simulator or
real compilation. When the backend chosen disagrees with numba's state, the fix depends on how that
happened: numba imported before harness (import harness first), harness imported first but the backend
picked after numba loaded (HARNESS_BACKEND unset, so `auto` picks at the first launch), or another
backend already running in this process (only a new process helps).
"""
from __future__ import annotations

import os


def backend_mismatch(wanted: str, numba_is_sim: bool, *, numba_imported_first: bool,
                     simulator_set_at_import: bool, earlier_backend: str | None) -> str:
    """The message for `wanted` when numba was imported with the simulator `numba_is_sim`."""
    state = f"numba is already imported {'with' if numba_is_sim else 'without'} the simulator " \
            f"(NUMBA_ENABLE_CUDASIM={int(numba_is_sim)})"
    if earlier_backend and earlier_backend != wanted:
        return (f"the '{wanted}' backend cannot start: this process already runs the '{earlier_backend}' "
                f"backend and {state}; the simulator and real compilation cannot share a process: run "
                f"the '{wanted}' backend in a separate process")
    if wanted == "sim":
        if numba_imported_first:
            return (f"the 'sim' backend cannot start: {state}, because numba was imported before harness; "
                    "import harness first (with HARNESS_BACKEND=sim in the environment), before numba or "
                    "anything that imports it, or set NUMBA_ENABLE_CUDASIM=1 in the environment")
        chosen = os.environ.get("HARNESS_BACKEND") or "unset"
        return (f"the 'sim' backend cannot start: {state}: harness was imported first, but the backend was "
                f"chosen only when the first kernel ran (HARNESS_BACKEND={chosen}), after numba had loaded "
                "(through harness.engine or your kernels); set HARNESS_BACKEND=sim in the environment "
                "before Python starts, or call harness.backends.get_backend('sim') before importing "
                "numba or harness.engine")
    cause = ("HARNESS_BACKEND=sim in the environment when harness was imported" if simulator_set_at_import
             else "NUMBA_ENABLE_CUDASIM=1 in the environment")
    return (f"the '{wanted}' backend cannot start: {state}, turned on by {cause}; the simulator and real "
            f"compilation cannot share a process: run the '{wanted}' backend in a process without "
            f"{'HARNESS_BACKEND=sim' if simulator_set_at_import else 'NUMBA_ENABLE_CUDASIM'}")
