"""Backends: where kernels are compiled and run.

`sim` (numba's CUDA simulator) is the default without a GPU, `cuda` with one, `ptx` compiles only.
The simulator must be chosen before numba is imported, so selection sets the environment first.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import harness
from harness.backends.import_order import backend_mismatch

BACKENDS = ("sim", "ptx", "cuda")
_current = None                  # process-wide: numba's simulator and real compilation cannot share a process
_prepared: str | None = None     # the backend this process's environment was prepared for (numba's choice)


def gpu_available() -> bool:
    """True when a CUDA GPU is visible (asked of nvidia-smi, so numba stays unimported)."""
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def cupy_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("cupy") is not None


def resolve(name: str | None) -> str:
    explicit = bool(name)
    name = name or os.environ.get("HARNESS_BACKEND") or "auto"
    if name == "auto":
        if gpu_available():
            if cupy_available():
                return "cuda"
            print("harness: a GPU is visible but cupy is not installed (pip install -e '.[gpu]' in a checkout); "
                  "using the simulator", file=sys.stderr)
        return "sim"
    if name not in BACKENDS:
        source = "" if explicit else f"HARNESS_BACKEND={name!r}: "
        raise ValueError(f"{source}unknown backend '{name}' (choose from auto, {', '.join(BACKENDS)})")
    return name


DEFAULT_RUN_TIMEOUT_S = 300.0


def run_timeout_from_env() -> float:
    """HARNESS_RUN_TIMEOUT: seconds one run may take (default 300; 0 for no limit). ValueError
    with a one-line message for anything else; the plugin checks it when a session starts."""
    text = os.environ.get("HARNESS_RUN_TIMEOUT", "").strip()
    if not text:
        return DEFAULT_RUN_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise ValueError(f"HARNESS_RUN_TIMEOUT={text!r}: expected the seconds one run may take, a number "
                         f">= 0 (0: no limit; default {DEFAULT_RUN_TIMEOUT_S:g})")
    return value


def requested_backend(name: str | None) -> str:
    """What was asked for: the option, else HARNESS_BACKEND, else auto."""
    return name or os.environ.get("HARNESS_BACKEND") or "auto"


def announce(requested: str | None, chosen: str) -> str:
    """One line naming the backend and, for auto, why it was picked (printed at the start and in
    the summary of a session, so a reader knows where the kernels ran)."""
    requested = requested_backend(requested)
    if requested != "auto":
        return f"backend {chosen}"
    if chosen == "cuda":
        why = "a GPU is visible and cupy is installed"
    elif gpu_available():
        why = "a GPU is visible but cupy is not installed (pip install -e '.[gpu]' in a checkout)"
    else:
        why = "no GPU visible: numba's CUDA simulator"
    return f"backend {chosen} (picked by auto: {why})"


def prepare_environment(name: str) -> None:
    """Set the environment a backend needs; must run before numba is imported."""
    global _prepared
    want_sim = name == "sim"
    if "numba" in sys.modules:
        from numba.core import config
        if bool(config.ENABLE_CUDASIM) != want_sim:
            raise RuntimeError(backend_mismatch(name, bool(config.ENABLE_CUDASIM),
                                                numba_imported_first=harness.NUMBA_IMPORTED_FIRST,
                                                simulator_set_at_import=harness.SIMULATOR_SET_AT_IMPORT,
                                                earlier_backend=_prepared))
    if want_sim:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    _prepared = name


def get_backend(name: str | None = None):
    """The process-wide backend instance (created once; the choice cannot change later). Without a
    name: the backend the process was prepared for (the pytest plugin prepares it), else
    HARNESS_BACKEND, else auto."""
    global _current
    name = resolve(name or _prepared)
    if _current is not None:
        if _current.name != name:
            raise RuntimeError(f"backend '{_current.name}' is already active in this process; cannot switch to '{name}'")
        return _current
    prepare_environment(name)
    if name == "sim":
        from harness.backends.sim import SimBackend
        _current = SimBackend()
    elif name == "ptx":
        from harness.backends.ptx import PtxBackend
        _current = PtxBackend()
    else:
        from harness.backends.cuda import CudaBackend
        _current = CudaBackend()
    return _current


def _register_default() -> None:
    """The engine's default backend (an Engine made without one) is this process-wide backend."""
    from harness.core.target import set_default_backend
    set_default_backend(get_backend)


_register_default()
