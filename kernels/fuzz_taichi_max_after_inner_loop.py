"""Reduced from the Warp/Taichi CPU campaign's seed 284 (`harness fuzz --engine bundled,warp,taichi
--seed 284 --count 1`; siblings 1376 and 447): in a grid-stride loop (a loop inside Taichi's
parallel loop), an inner loop and then max (or min) of two loads. Taichi 1.7.4's reverse gives the
max's adjoint to the operand that won in another trip of the grid-stride loop."""
from numba import cuda


def kernel(out, x, y):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        acc = x[i]
        for k in range(3):
            acc = acc * 0.5 + x[i]
        out[i] = max(x[i], y[i]) + 0.25 * acc


def kernel_min(out, x, y):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        acc = x[i]
        for k in range(3):
            acc = acc * 0.5 + x[i]
        out[i] = min(x[i], y[i]) + 0.25 * acc


def kernel_no_inner_loop(out, x, y):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = max(x[i], y[i]) + 0.25 * x[i]
