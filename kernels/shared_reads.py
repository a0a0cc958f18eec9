"""Kernels whose threads all read the same element, so reverse mode must accumulate atomically."""
from numba import cuda


def scale_by_first(out, inp, a):
    """Enzyme issue 2199: out[i] = a[0] * in[i]; da = sum(dout * in) over every thread."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[0] * inp[i]


def neighbours(out, x):
    """A 3-point stencil: x[i-1], x[i], x[i+1] are read by three different threads."""
    i = cuda.grid(1)
    n = x.shape[0]
    if i >= 1 and i < n - 1:
        out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]
