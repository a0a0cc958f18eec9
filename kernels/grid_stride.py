"""Grid-stride loops: `range` with a step known only at run time (the launch's thread count).

Each thread handles elements start, start + stride, ... so a fixed launch covers any size."""
import math

from numba import cuda


def grid_stride(x, y):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.size, stride):
        y[i] = math.sin(x[i]) * x[i]


def grid_stride_down(x, y, step):
    """A negative run-time step, and a `continue` that must not skip the counter's advance."""
    t = cuda.grid(1)
    for i in range(x.size - 1 - t, -1, -step):
        if i % 3 == 0:
            continue
        y[i] = x[i] * x[i]


def grid_stride_in_place(x, y):
    """y[i] read and written by the thread that owns i: disjoint across threads, but the ownership
    analysis does not yet see through a run-time stride."""
    start = cuda.grid(1)
    for i in range(start, x.size, cuda.gridsize(1)):
        y[i] = y[i] * x[i]
