"""GPU AD regression harness: the public facade, what kernels and user scripts import.

    from harness import autodiff, Reverse, Duplicated      # device-side autodiff inside a kernel
    from harness import partials_of                        # a custom derivative rule
    from harness import launch, LaunchConfig, Active       # the engine from a script

The names below are loaded on first use (PEP 562), so `import harness.model` stays as light as
it was and importing the package does not import numba. Code inside the harness imports the
implementation (`harness.engine...`, `harness.core...`), never this facade.

numba reads NUMBA_ENABLE_CUDASIM once, when it is first imported, so the simulator backend has to
be chosen before that. `HARNESS_BACKEND=sim` in the environment does it here, at the first import
of anything from `harness` (for example `from harness.engine import launch` in a script), so that
numba imported later, also by the script's own kernels, runs on the simulator.
"""
import importlib as _importlib
import os as _os
import sys as _sys

# Kept for the message of a backend that cannot be used any more (harness.backends.import_order): what
# went wrong depends on whether numba came first.
NUMBA_IMPORTED_FIRST = "numba" in _sys.modules
SIMULATOR_SET_AT_IMPORT = _os.environ.get("HARNESS_BACKEND") == "sim" and not NUMBA_IMPORTED_FIRST

if SIMULATOR_SET_AT_IMPORT:
    _os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

# public name -> the module that defines it
_PUBLIC = {
    **dict.fromkeys(("autodiff", "Forward", "Reverse"), "harness.engine.device"),
    **dict.fromkeys(("Active", "BatchDuplicated", "Const", "Duplicated", "DuplicatedNoNeed"), "harness.core.activity"),
    "partials_of": "harness.engine.rules.custom",
    **dict.fromkeys(("Engine", "EngineOptions", "LaunchConfig", "LaunchResult", "launch"), "harness.engine.runtime.launch"),
    **dict.fromkeys(("HarnessError", "UnsupportedError"), "harness.core.errors"),
}
__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(_importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
