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
    """y[i] read and written by the thread that owns i: thread t touches only elements congruent
    to t modulo the launch's thread count, so no other thread shares them."""
    start = cuda.grid(1)
    for i in range(start, x.size, cuda.gridsize(1)):
        y[i] = y[i] * x[i]


def while_stride_in_place(x, y):
    i = cuda.grid(1)
    while i < x.size:
        y[i] = y[i] * math.sin(x[i])
        i += cuda.blockDim.x * cuda.gridDim.x


def grid_stride_neighbour(x, y):
    """Reads y[i + 1], which the next thread overwrites: a real cross-thread write-after-read."""
    for i in range(cuda.grid(1), x.size - 1, cuda.gridsize(1)):
        y[i] = y[i + 1] * x[i]


def half_grid_stride(x, y):
    """Advances by half the thread count: threads t and t + G/2 meet, so the update is shared."""
    i = cuda.grid(1)
    while i < x.size:
        y[i] = y[i] * x[i]
        i += cuda.gridsize(1) // 2


def block_stride_in_place(x, y):
    """A block-stride loop (the step is blockDim.x, not the grid's thread count): thread t of
    block 1 reaches the elements thread t of block 0 updates in its second iteration."""
    for i in range(cuda.grid(1), x.size, cuda.blockDim.x):
        y[i] = y[i] * x[i]



def grid_stride_sum(out, alpha, x):
    """Each thread sums x[i]^2 (x[i] read twice) over its grid-stride elements, scaled by an
    Active alpha: the reverse kernel ends in alpha's reduction, so it is block-coarsened, and
    cuda.gridsize must be the real launch's thread count, not the capped physical grid's."""
    g = cuda.grid(1)
    acc = 0.0
    for i in range(g, x.size, cuda.gridsize(1)):
        acc += x[i] * x[i]
    if g < out.shape[0]:
        out[g] = alpha * acc
