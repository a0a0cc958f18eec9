"""What every backend offers the launcher (the interface lives in harness/core/target.py, which
the engine shares): arrays in, compile, launch, arrays out."""
from ..core.target import Backend, TargetConfig  # noqa: F401
