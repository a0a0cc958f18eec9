"""Reduced by hand from the Warp/Taichi CPU campaign's seed 1462 (`harness fuzz --engine
bundled,warp,taichi --seed 1462 --count 1`), through plain Taichi runs: in a grid-stride loop (a loop
inside Taichi's parallel loop), a local set in an if, a loop carrying a value started from it, and
then the local used nonlinearly inside another if. Taichi 1.7.4's reverse reads a wrong forward value
of the local there."""
from numba import cuda


def kernel(out, x, y):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        v = y[i]
        if i % 2 == 0:
            v = x[i]
        acc = v
        for k in range(4):
            acc = acc * 0.69 + 1.0
        w = x[i]
        if x[i] > -5.0:
            w = v * v
        out[i] = acc + w


def kernel_linear(out, x, y):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        v = y[i]
        if i % 2 == 0:
            v = x[i]
        acc = v
        for k in range(4):
            acc = acc * 0.69 + 1.0
        w = x[i]
        if x[i] > -5.0:
            w = v * 3.0
        out[i] = acc + w


def kernel_no_first_if(out, x, y):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        v = y[i]
        acc = v
        for k in range(4):
            acc = acc * 0.69 + 1.0
        w = x[i]
        if x[i] > -5.0:
            w = v * v
        out[i] = acc + w
