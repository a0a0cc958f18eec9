"""The bundled AD engine: source-to-source forward and reverse mode for numba.cuda kernels."""
from harness.core.activity import Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed
from harness.engine.runtime.launch import Engine, EngineOptions, LaunchConfig, LaunchResult, launch

__all__ = ["Active", "BatchDuplicated", "Const", "Duplicated", "DuplicatedNoNeed", "Engine",
           "EngineOptions", "LaunchConfig", "LaunchResult", "launch"]
