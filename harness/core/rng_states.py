"""numba's random number generator states (numba.cuda.random), as host data: the record dtype of
one xoroshiro128+ state and the states `create_xoroshiro128p_states(count, seed)` makes, computed
with numpy alone (the case loader and the inputs know no numba; a test checks these against
numba's own initialisation).

The dtype has no numpy name of its own (a record prints as a field list), so the engine and the
case records call it STATE_DTYPE_NAME.
"""
from __future__ import annotations

import numpy as np

# numba.cuda.random.xoroshiro128p_dtype, field for field; dtypes compare by value, so an array
# numba made and one made here are recognised alike
STATE_DTYPE = np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)
STATE_DTYPE_NAME = "xoroshiro128p"

_MASK = (1 << 64) - 1
_JUMP = (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922)     # xoroshiro128+'s jump: 2**64 steps ahead


def is_state_dtype(dtype) -> bool:
    try:
        return np.dtype(dtype) == STATE_DTYPE
    except TypeError:
        return False


def dtype_name(dtype) -> str:
    """The name an array dtype goes by in the harness and the engine: numpy's, or STATE_DTYPE_NAME."""
    return STATE_DTYPE_NAME if is_state_dtype(dtype) else str(np.dtype(dtype))


def numpy_dtype(name: str) -> np.dtype:
    """The inverse of dtype_name."""
    return STATE_DTYPE if name == STATE_DTYPE_NAME else np.dtype(name)


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _MASK


def _next(s0: int, s1: int) -> tuple[int, int]:
    """The state after one xoroshiro128+ step (the number it yields is not needed here)."""
    s1 ^= s0
    return (_rotl(s0, 55) ^ s1 ^ ((s1 << 14) & _MASK)), _rotl(s1, 36)


def _jump(s0: int, s1: int) -> tuple[int, int]:
    j0 = j1 = 0
    for word in _JUMP:
        for bit in range(64):
            if word & (1 << bit):
                j0 ^= s0
                j1 ^= s1
            s0, s1 = _next(s0, s1)
    return j0, j1


def _splitmix64(seed: int) -> int:
    """The first word splitmix64 yields from `seed`: both words of a freshly seeded state."""
    z = (seed + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def seeded_states(count: int, seed: int, subsequence_start: int = 0) -> np.ndarray:
    """What numba.cuda.random.create_xoroshiro128p_states(count, seed, subsequence_start) holds:
    state 0 from splitmix64 of the seed (both words), jumped subsequence_start times, and each next
    state the one before it jumped 2**64 steps ahead, so no two threads' sequences overlap.

    numba jumps one state after another; the jump is linear over GF(2) (xor and rotations of the
    128 state bits), so here it is a 128 x 128 bit matrix J, and the states are built by doubling:
    states [k, 2k) are J^k applied to states [0, k) at once, and J^k squared gives the next
    matrix. That is 128 array operations per doubling instead of 128 steps per state."""
    states = np.zeros(count, STATE_DTYPE)
    if count == 0:
        return states
    jump = _jump_matrix()
    first = _power_apply(jump, subsequence_start, _splitmix64(seed & _MASK) * ((1 << 64) + 1))
    s0 = np.array([first & _MASK], np.uint64)
    s1 = np.array([first >> 64], np.uint64)
    power = jump                                # J^len(s0)
    while len(s0) < count:
        n0, n1 = _apply_to_arrays(power, s0, s1)
        s0, s1 = np.concatenate([s0, n0]), np.concatenate([s1, n1])
        power = _compose(power, power)
    states["s0"], states["s1"] = s0[:count], s1[:count]
    return states


# A linear map of 128-bit states as its columns: columns[k] is the image of bit k (s0's bits are
# 0..63, s1's 64..127), a 128-bit Python int.

def _jump_matrix() -> tuple[int, ...]:
    columns = []
    for k in range(128):
        j0, j1 = _jump((1 << k) & _MASK, (1 << k) >> 64)
        columns.append(j0 | (j1 << 64))
    return tuple(columns)


def _apply(columns: tuple[int, ...], state: int) -> int:
    out = 0
    while state:
        low = state & -state
        out ^= columns[low.bit_length() - 1]
        state ^= low
    return out


def _compose(outer: tuple[int, ...], inner: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(_apply(outer, column) for column in inner)


def _power_apply(columns: tuple[int, ...], times: int, state: int) -> int:
    """The map applied `times` times to `state`, by squaring."""
    while times:
        if times & 1:
            state = _apply(columns, state)
        times >>= 1
        if times:
            columns = _compose(columns, columns)
    return state


def _apply_to_arrays(columns: tuple[int, ...], s0: np.ndarray, s1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The map applied to every state (s0[i], s1[i]) at once."""
    out0, out1 = np.zeros_like(s0), np.zeros_like(s1)
    for k, column in enumerate(columns):
        word = s0 if k < 64 else s1
        set_ = np.uint64(0) - ((word >> np.uint64(k % 64)) & np.uint64(1))      # all ones where bit k is set
        out0 ^= set_ & np.uint64(column & _MASK)
        out1 ^= set_ & np.uint64(column >> 64)
    return out0, out1
