"""Kernels of the activity-relation cases (cases/activities-*.yaml, cases/relations-*.yaml)."""
import math

from numba import cuda


def scaled_accumulate(y, a, x):
    """y[i] += a * sin(x[i]) * x[i]: y is read and written (its shadow accumulates and is consumed),
    a is a scalar every thread reads, x is read only: every activity of every argument means
    something different here."""
    i = cuda.grid(1)
    if i < y.shape[0]:
        y[i] += a * math.sin(x[i]) * x[i]
