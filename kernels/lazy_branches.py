"""Subexpressions Python evaluates lazily, guarding what must not run where the guard fails: a
read past an array's end (`x[i + 1] if i + 1 < n else 0.0`, `i < n and x[i] > 0.0`), a function
outside its domain (`math.sqrt(v) if v > 0.0 else 0.0`, whose derivative there is NaN), a
loop condition. Warp's and Taichi's select and logical operators evaluate every operand; the
adapters write these as branches (harness/adapters/lazy.py)."""
import math

from numba import cuda


def next_read(out, x):
    """Each thread reads its right neighbour, the last one nothing: x[i + 1] at i = n - 1 is past
    the end, and in reverse its adjoint would be added there."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i + 1] if i + 1 < x.shape[0] else 0.0
        out[i] = v * x[i]


def sqrt_where_positive(out, x):
    """The square root only where its argument is positive: evaluated elsewhere, its derivative
    (infinite at 0, NaN below) times the zero adjoint of the side not taken is NaN."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        out[i] = math.sqrt(v) if v > 0.0 else 0.5 * v


def guarded_and(out, x, n):
    """A read behind `and`: threads past n must not read x (n is x's length; out is longer)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        if i < n and x[i] > 0.0:
            out[i] = x[i] * x[i]
        elif 0 < i < n and x[i - 1] < x[i] < 0.5:
            out[i] = 3.0 * x[i]
        else:
            out[i] = 1.0


def while_and(out, x, n):
    """A search whose condition reads behind `and`: the run of positive values from thread i."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        k = i
        while k < n and x[k] > 0.0:
            k += 1
        out[i] = x[i] * float(k - i) if i < n else 0.0
