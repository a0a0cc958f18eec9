"""Stencils whose reverse is a scatter (cherimoya issue 25, clad PR 1104)."""
import math

from numba import cuda


def conv3(out, x, w, d):
    """out[l] = w0 x[l-d] + w1 x[l] + w2 x[l+d]: in reverse, x[l] gets contributions from three threads."""
    l = cuda.grid(1)
    n = x.shape[0]
    if l >= d and l < n - d:
        out[l] = w[0] * x[l - d] + w[1] * x[l] + w[2] * x[l + d]


def conv3_literal(out, x, w):
    """conv3 with literal offsets: out[l] = w0 x[l-1] + w1 x[l] + w2 x[l+1]."""
    l = cuda.grid(1)
    n = x.shape[0]
    if l >= 1 and l < n - 1:
        out[l] = w[0] * x[l - 1] + w[1] * x[l] + w[2] * x[l + 1]


def neighbour_product(out, x):
    """Nonlinear: out[l] = x[l-1] * x[l+1] + x[l+1] * x[l+1] (two reads at offset +1: duplicate offsets)."""
    l = cuda.grid(1)
    if l >= 1 and l < x.shape[0] - 1:
        out[l] = x[l - 1] * x[l + 1] + x[l + 1] * x[l + 1]


def sin_shift(out, x, y, d):
    """Nonlinear with a runtime offset: v = sin(x[l+d]) y[l] + x[l] / 2, then a branch on v (the
    reader replays it to know which store thread l took)."""
    l = cuda.grid(1)
    if l < out.shape[0] and l + d < x.shape[0]:
        v = math.sin(x[l + d]) * y[l] + 0.5 * x[l]
        if v > 0.0:
            out[l] = v * v
        else:
            out[l] = 2.0 * v


def skip_odd(out, x, d):
    """A guard that skips every odd thread: only even threads read x[l - d] and x[l]."""
    l = cuda.grid(1)
    if l >= d and l < x.shape[0] and l % 2 == 0:
        out[l] = x[l - d] * x[l]


def wrap_left(out, x):
    """No guard on the left: thread 0 reads x[-1], which wraps around to the last element."""
    l = cuda.grid(1)
    if l < x.shape[0]:
        out[l] = 3.0 * x[l - 1] + x[l]


def scale_in_place_by_neighbours(y, x):
    """Ineligible: y is read and written (in place, each thread its own element), so a reader
    replayed by another thread could see y's new value -- the reverse keeps the scatter into x."""
    l = cuda.grid(1)
    if l >= 1 and l < x.shape[0] - 1:
        y[l] = y[l] * (x[l - 1] + x[l + 1])


def gather_by_index(out, x, idx):
    """Ineligible: the offset depends on data (idx[l]), so the reverse keeps the scatter."""
    l = cuda.grid(1)
    if l < out.shape[0]:
        out[l] = x[l + idx[l]] * 2.0


def conv3_block_index(out, x, w, d):
    """conv3 with the global index written out: blockIdx.x * blockDim.x + threadIdx.x."""
    l = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if l >= d and l < x.shape[0] - d:
        out[l] = w[0] * x[l - d] + w[1] * x[l] + w[2] * x[l + d]


def two_stencils(out, x, z):
    """Two gathered arrays: out[l] = x[l-1] z[l+1] + x[l+1] + z[l-1]."""
    l = cuda.grid(1)
    if l >= 1 and l < out.shape[0] - 1:
        out[l] = x[l - 1] * z[l + 1] + x[l + 1] + z[l - 1]


def scaled_neighbours(out, alpha, x):
    """An Active scalar beside a gathered array: out[l] = alpha (x[l-1] + x[l+1]) + alpha^2."""
    l = cuda.grid(1)
    if l >= 1 and l < x.shape[0] - 1:
        out[l] = alpha * (x[l - 1] + x[l + 1]) + alpha * alpha
