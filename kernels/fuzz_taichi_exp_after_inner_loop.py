"""The exp sibling of fuzz-taichi-grid-stride-loops (seed 134's tanh), written by hand after seeds 1588
and 181 of the Warp/Taichi CPU campaign (exp(tanh(...)) after an inner loop in a grid-stride loop):
Taichi 1.7.4's adjoint of exp reads the forward result, which the grid-stride loop keeps in one slot
that its next trip overwrites."""
import math

from numba import cuda


def kernel(out, x, y):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        acc = y[i]
        for k in range(3):
            acc = acc * 0.5 + y[i]
        out[i] = math.exp(x[i]) + 0.25 * acc
