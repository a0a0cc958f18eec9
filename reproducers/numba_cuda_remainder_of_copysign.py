"""numba-cuda reproducer: a kernel computing math.remainder(math.copysign(acc, acc), c) returns the
remainder with its sign lost on an NVIDIA H200 (CUDA 13.0, numba-cuda 0.30.4), where Python's math
gives a negative value. No harness import: the kernel is the GPU fuzz campaign's seed 1652, as
generated (cases/fuzz-cuda-remainder-of-copysign.yaml); the same expression in CUDA C++ is wrong
too (cuda_remainder_of_copysign.cu), so the fault is CUDA's compiler. Run: python3 this_file.py
(exit status 1 when the GPU's values differ from Python's)."""
import math
import sys

import numpy as np
from numba import cuda


@cuda.jit
def kernel(out, x, y, a, idx, n, acc, cnt):
    i = cuda.grid(1)
    if i >= out.shape[0]:
        return
    v1 = math.sin(0.79)
    t2 = math.radians(30.0 * x[idx[i]])
    if t2 < 0.16:
        v1 = 0.85
    acc3 = y[(i + 1) % 16]
    for k4 in range(n + 1, 0, -1):
        if k4 % 2 == 1:
            continue
        acc3 = acc3 * 0.73 + y[(i + 1) % 16]
        old5 = cuda.atomic.add(cnt, i, 1)
        cuda.atomic.add(acc, old5 % 3, acc3)
    v6 = 0.8
    v7 = math.fabs(x[i])
    t8 = 1.74 + v6
    if t8 > 0.11:
        t9 = 0.51
        t10 = math.atan2(y[i], 1.0 + t9 * t9)
        v7 = math.remainder((math.copysign(acc3, acc3)), 0.9 + t10 * t10)
    else:
        v7 = v7 * min(v1, x[idx[i]])
    out[i] = x[idx[i]] + 0.5 * x[i] + 0.37 * v1 + 0.48 * acc3 + 0.27 * v6 + 0.49 * v7


def python_out(x, y, idx, n):
    """The kernel's `out`, thread by thread, in plain Python (the atomics do not reach `out`)."""
    out = []
    for i in range(16):
        v1 = 0.85 if math.radians(30.0 * x[idx[i]]) < 0.16 else math.sin(0.79)
        acc3 = y[(i + 1) % 16]
        for k4 in range(n + 1, 0, -1):
            if k4 % 2 == 0:
                acc3 = acc3 * 0.73 + y[(i + 1) % 16]
        t10 = math.atan2(y[i], 1.0 + 0.51 * 0.51)
        v7 = math.remainder(math.copysign(acc3, acc3), 0.9 + t10 * t10)
        out.append(x[idx[i]] + 0.5 * x[i] + 0.37 * v1 + 0.48 * acc3 + 0.27 * 0.8 + 0.49 * v7)
    return np.array(out)


rng = np.random.default_rng(1)
x, y = rng.normal(size=16), rng.normal(size=16)
idx = np.array([9, 7, 3, 15, 6, 1, 0, 14, 11, 12, 4, 10, 13, 2, 5, 8], np.int32)
out, acc, cnt = np.zeros(16), np.zeros(3), np.zeros(16, np.int32)
kernel[1, 16](out, x, y, 0.612, idx, 2, acc, cnt)
want = python_out(x, y, idx, 2)
wrong = np.abs(out - want) > 1e-12
for i in range(16):
    print(f"out[{i:2d}]: gpu {out[i]:+.6f}  python {want[i]:+.6f}{'   WRONG' if wrong[i] else ''}")
print(f"{wrong.sum()} of 16 wrong")
sys.exit(1 if wrong.any() else 0)
