"""Kernels for tests/suite/test_sim_limits.py: launch limits, diverging barriers and hung launches.

Imported only after the backend has configured numba (see the fixture there)."""
from numba import cuda


def copy(x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = x[i]


def barrier_in_half(x):
    i = cuda.threadIdx.x
    if i < 16:
        cuda.syncthreads()              # reached by half the block only
    x[i] = i


def barrier_per_branch(x):
    i = cuda.threadIdx.x
    if i < 16:
        x[i] = 1.0
        cuda.syncthreads()              # two different barriers: undefined on a GPU
    else:
        x[i] = 2.0
        cuda.syncthreads()


def uniform_barrier(x, y):
    i = cuda.threadIdx.x
    y[i] = x[i]
    cuda.syncthreads()
    x[i] = y[(i + 1) % y.size]


def spin(x):
    i = cuda.threadIdx.x
    while x[0] == 0.0:                  # nothing ever sets x[0]: the launch never ends
        i += 1
