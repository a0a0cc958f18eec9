"""Atomic extrema: next to other state (finite-difference steps per argument), several statements
on one array, loops beside them, and ties."""
import math

from numba import cuda


def min_beside_large(out, x, big, half):
    """out[0] = min(out[0], x[i]^2) by atomic min, beside half[i] = big[i] / 2 + x[i] (big near 10000).
    A finite-difference step scaled by the largest value of the whole state (about 0.06 here) moves
    the small squares of x far enough to change which thread wins the minimum."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.min(out, 0, x[i] * x[i])
        half[i] = big[i] * 0.5 + x[i]



def components_max(out, x):
    """Each thread's 3-vector (x, x^2 / 4, sin x) maximised component-wise into out[0..2] by three
    atomic max statements on one array: each component has its own winner."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.max(out, 0, x[i])
        cuda.atomic.max(out, 1, 0.25 * x[i] * x[i])
        cuda.atomic.max(out, 2, math.sin(x[i]))


def shifted_pairs_min(out, x):
    """Two atomic min statements whose indices differ by a constant: thread i reaches out[i % 3]
    and out[i % 3 + 1], so out[1] and out[2] have contributions from both statements."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.min(out, i % 3, x[i] * x[i] - 1.0)
        cuda.atomic.min(out, i % 3 + 1, 0.5 * x[i] + 0.3)


def max_after_loop(out, x, c, n):
    """A dynamic loop (Horner's rule over n coefficients) computes the value an atomic max takes
    after the loop: the replay that finds the winner runs the loop as written."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        acc = 0.0
        for k in range(n):
            acc = acc * x[i] + c[k]
        cuda.atomic.max(out, i % 2, acc)


def max_in_loop(out, x, n):
    """An atomic max inside a dynamic loop: a thread contributes once per iteration, so each
    execution is named by its place among the thread's max/min executions."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        for k in range(n):
            cuda.atomic.max(out, 0, x[i] * (k + 1))


@cuda.jit(device=True)
def _contribute(out, k, v):
    cuda.atomic.max(out, k, v)


def max_through_helper_twice(out, x):
    """One device helper holding an atomic max, inlined twice: two statements on one array."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        _contribute(out, 0, x[i])
        _contribute(out, 0, math.cos(x[i]))


def tied_max(out, x):
    """Ties: both statements give the same value (x[i]), and the case's x repeats its largest value
    in threads 1 and 3. The engine's subgradient: the lowest thread, then its first statement."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.max(out, 0, x[i])
        cuda.atomic.max(out, 0, x[i] * 1.0)


def min_after_while(out, x, limit):
    """A while loop with a break (halving until below a scalar limit, at most 20 times) before an
    atomic min of the result: the replay runs the loop, its exit test and its break as written."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = 3.0 + x[i] * x[i]
        k = 0
        while v > limit:
            v = v * 0.5
            k += 1
            if k >= 20:
                break
        cuda.atomic.min(out, i % 2, v + 0.1 * x[i])


def grid_stride_max(out, x):
    """The max reduction most kernels write: a grid-stride loop, one atomic max per element."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.shape[0], stride):
        cuda.atomic.max(out, 0, x[i] * x[i])


def min_in_while_and_after(out, x, limit):
    """An atomic min in a while loop and another after it, on one array: both statements count."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        k = 0
        while v < limit and k < 4:
            cuda.atomic.min(out, i % 2, v * v - 1.0)
            v = v + 0.5
            k += 1
        cuda.atomic.min(out, 1, v)


def max_in_nested_loops(out, x, n, m):
    """An atomic max two loops deep: the inner loop is replayed in each outer reverse iteration,
    its executions named from the count the outer iteration taped."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        for a in range(n):
            for b in range(m):
                cuda.atomic.max(out, b % 2, x[i] * (a + 1) - x[i] * x[i] * b)
