"""Kernels of multi-launch programs: launches that share named buffers."""
import math

from numba import cuda


def square_into(tmp, x):
    """First stage of a pipeline: an intermediate buffer the case creates."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        tmp[i] = x[i] * x[i]


def accumulate_sin(y, a, tmp):
    """Second stage: y += a sin(tmp), in place, with an Active scalar a shared by the launches."""
    i = cuda.grid(1)
    if i < y.shape[0]:
        y[i] = y[i] + a * math.sin(tmp[i])


def diffuse(u_next, u, k):
    """One explicit time step of a nonlinear diffusion, fixed ends: u_next from u (not in place)."""
    i = cuda.grid(1)
    n = u.shape[0]
    if i < n:
        if i == 0 or i == n - 1:
            u_next[i] = u[i]
        else:
            v = u[i]
            u_next[i] = v + k * (u[i - 1] - 2.0 * v + u[i + 1]) - 0.1 * v * v * v


def copy_back(u, u_next):
    """The end of a time step: u takes the new values, overwriting what the previous step read."""
    i = cuda.grid(1)
    if i < u.shape[0]:
        u[i] = u_next[i]


def compact_positive(out, x, counter):
    """Stream compaction: each positive x[i] takes the next free slot of an atomic counter, and
    out[slot] = x[i]^2. The counter is a side effect: a second execution starts where the first
    stopped unless the counter is reset."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        if x[i] > 0.0:
            slot = cuda.atomic.add(counter, 0, 1)
            out[slot] = x[i] * x[i]
