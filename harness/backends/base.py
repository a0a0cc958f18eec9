"""What every backend offers the launcher (the interface lives in harness/core/target.py, which
the engine shares): arrays in, compile, launch, arrays out."""
from ..core.target import Backend, TargetConfig  # noqa: F401


def with_line_info(compile_fn):
    """Compile with line info (profilers and fault reports map PTX back to source lines); when
    NVVM rejects the line-info metadata, as numba-cuda 0.30's does for some generated kernels with
    tape loops (kernels/soundness.py:row_recurrence), compile again without it. The ptx and cuda
    backends share this, so the compile-only tier meets the same failure as a GPU."""
    try:
        return compile_fn(True)
    except Exception as exc:                  # noqa: BLE001 - only NVVM's rejection is retried
        if "nvvm" not in type(exc).__name__.lower() and "NVVM" not in str(exc):
            raise
        return compile_fn(False)

