"""numba's random number generator (numba.cuda.random) in differentiated kernels.

A kernel draws with `xoroshiro128p_uniform_float32(states, i)` and its siblings: each call reads
the generator state `states[i]` (a record of two uint64 words, `s0` and `s1`), returns the next
number and writes the advanced state back. So a draw is, to the engine, a read-modify-write of one
element of a Const array that returns a value: an `ir.ssa.Draw`, handled wherever an atomic's old
value is (never recomputed by a replay, taped per loop iteration, zero derivative). The generated
kernels call numba's own functions, imported by the module's prelude (`prelude`), so the draws are
bit for bit the ones the user's kernel makes on the same states.

The states are an array of `STATE_DTYPE` records; the engine's argument types name that dtype
`STATE_DTYPE_NAME` (a record has no numpy name of its own).
"""
from __future__ import annotations

import numpy as np

from harness.engine.ir.ssa import Draw, KernelIR, walk

# numba.cuda.random.xoroshiro128p_dtype, field for field (the launcher compares dtypes by value,
# so a copy made by numpy or by numba is recognised alike)
STATE_DTYPE = np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)
STATE_DTYPE_NAME = "xoroshiro128p"

# draw function of numba.cuda.random -> the dtype of the number it returns
DRAWS = {
    "xoroshiro128p_uniform_float32": "float32",
    "xoroshiro128p_uniform_float64": "float64",
    "xoroshiro128p_normal_float32": "float32",
    "xoroshiro128p_normal_float64": "float64",
}
# the module's other device functions: they write a state without returning a number
STATE_WRITERS = ("xoroshiro128p_next", "xoroshiro128p_jump", "init_xoroshiro128p_state")


def is_state_dtype(dtype) -> bool:
    try:
        return np.dtype(dtype) == STATE_DTYPE
    except TypeError:
        return False


def dtype_name(dtype) -> str:
    """The name an argument's dtype goes by in the engine: numpy's, or STATE_DTYPE_NAME."""
    return STATE_DTYPE_NAME if is_state_dtype(dtype) else str(dtype)


def numpy_dtype(name: str) -> np.dtype:
    """The inverse of dtype_name."""
    return STATE_DTYPE if name == STATE_DTYPE_NAME else np.dtype(name)


def random_function(obj) -> str | None:
    """The name of numba.cuda.random's device function `obj` is, or None. Compared by identity with
    the module's own objects, however the kernel imported them."""
    module = getattr(obj, "__module__", None) or ""
    if not module.startswith("numba") or "random" not in module:
        return None
    import numba.cuda.random as random    # only kernels that name the module get here
    for name in (*DRAWS, *STATE_WRITERS):
        if getattr(random, name, None) is obj:
            return name
    return None


def draws_in(ir: KernelIR) -> list[Draw]:
    return [s for s in walk(ir.body) if isinstance(s, Draw)]


def prelude(ir: KernelIR) -> str:
    """The import of the draw functions a generated function calls ('' when it calls none)."""
    names = sorted({s.op for s in draws_in(ir)})
    if not names:
        return ""
    return f"from numba.cuda.random import {', '.join(names)}\n\n\n"
