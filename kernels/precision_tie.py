"""A branch on two values that are equal in exact arithmetic (from fuzz seed 1974).

`v6` is `v2` passed through `%` and `math.remainder` with moduli larger than `v2`, so `v2 > v6` is
false wherever every step rounds alike, and the kernel returns `0.5 * v6`. On numba's simulator a
float32 run computes `v2` in float64 (Python's `math`) but `v6` in float32 (numpy's `%`), so the
test flips there: the float32 program and its float64 twin take different branches.
"""
import math

from numba import cuda


def tie_branch(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v1 = x[i]
        v2 = math.log2(2.0 + math.sin(v1 * v1))
        v6 = math.remainder(v2 % (0.7 + v1 * v1), 0.9 + v1 * v1)
        out[i] = v2 if v2 > v6 else v6 * 0.5
