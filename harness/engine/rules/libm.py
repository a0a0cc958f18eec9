"""Math functions numba.cuda cannot compile, given to the generated kernels through ones it can.

`math.cbrt` has no numba.cuda implementation; libdevice has `cbrt` and `cbrtf`. A generated module
whose kernels call cbrt starts with CBRT_PRELUDE, which names them `cbrt_f64` and `cbrt_f32`
(Python's math.cbrt on the simulator, whose numba.cuda has no libdevice). Because numba cannot
compile the user's kernel either, its primal launch runs the engine's generated primal instead
(`primal_needs_engine`).
"""
from __future__ import annotations

from pathlib import Path

from harness.core.errors import UnsupportedError
from harness.engine.ir.ssa import Assign, KernelIR, Prim, walk

CBRT_PRELUDE = """from numba import config as _config

if _config.ENABLE_CUDASIM:
    def cbrt_f64(x):
        return math.cbrt(x)

    def cbrt_f32(x):
        return float32(math.cbrt(x))
else:
    from numba.cuda.libdevice import cbrt as cbrt_f64, cbrtf as cbrt_f32


"""
CBRT_OPS = ("cbrt", "cbrtf")


def uses_cbrt(ir: KernelIR) -> bool:
    return any(isinstance(s, Assign) and isinstance(s.expr, Prim) and s.expr.op in CBRT_OPS for s in walk(ir.body))


def primal_needs_engine(src, params) -> bool:
    """Whether the kernel calls a function only the engine's generated code can compile. Only
    kernels whose file mentions one are lowered to find out (a plain primal stays numba's own
    compile of the kernel); a kernel the engine refuses keeps numba's compile, and numba's error."""
    try:
        if "cbrt" not in Path(src.file).read_text(encoding="utf-8"):
            return False
    except OSError:
        return False
    from harness.engine.frontend.normalize import lower_kernel
    try:
        return uses_cbrt(lower_kernel(src, params))
    except UnsupportedError:
        return False
