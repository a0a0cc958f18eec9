"""Every error the harness raises on purpose (defined in harness/core/errors.py, which the engine
shares); importable from here as before."""
from .core.errors import (  # noqa: F401
    ActivityError, CaseError, HarnessError, KernelError, KernelFaultError, LaunchTimeoutError, MixedActivityError,
    NestedCompilationError, UnsupportedError, EngineInternalError,
)
