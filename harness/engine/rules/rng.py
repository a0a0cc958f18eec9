"""numba's random number generator (numba.cuda.random) in differentiated kernels.

A kernel draws with `xoroshiro128p_uniform_float32(states, i)` and its siblings: each call reads
the generator state `states[i]` (a record of two uint64 words, `s0` and `s1`), returns the next
number and writes the advanced state back. So a draw is, to the engine, a read-modify-write of one
element of a Const array that returns a value: an `ir.ssa.Draw`, handled wherever an atomic's old
value is (never recomputed by a replay, taped per loop iteration, zero derivative). The generated
kernels call numba's own functions, imported by the module's prelude (`prelude`), so the draws are
bit for bit the ones the user's kernel makes on the same states.

The states are an array of `STATE_DTYPE` records (harness/core/rng_states.py); the engine's
argument types name that dtype `STATE_DTYPE_NAME` (a record has no numpy name of its own).
"""
from __future__ import annotations

from harness.core.rng_states import STATE_DTYPE, STATE_DTYPE_NAME, dtype_name, is_state_dtype, numpy_dtype  # noqa: F401
from harness.engine.ir.ssa import Draw, KernelIR, walk

# draw function of numba.cuda.random -> the dtype of the number it returns
DRAWS = {
    "xoroshiro128p_uniform_float32": "float32",
    "xoroshiro128p_uniform_float64": "float64",
    "xoroshiro128p_normal_float32": "float32",
    "xoroshiro128p_normal_float64": "float64",
}
# the module's other device functions: `xoroshiro128p_next` draws a raw uint64, the others set a state
STATE_WRITERS = ("xoroshiro128p_next", "xoroshiro128p_jump", "init_xoroshiro128p_state")


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
