"""The dialect classes PyExaFMM's and SpeechBrain's kernels exposed (public-pyexafmm-*,
public-speechbrain-transducer-grad), each in a few lines: a scalar bound on one path of an `if`
only and read later under the same test, names bound to rows of arrays in an `if`/`elif` chain
with no `else`, and an element a thread stores and reads straight back (then overwrites) inside a
loop, in an array another of the thread's writes keeps from being thread-owned."""
import math

from numba import cuda


@cuda.jit
def one_path_scalar(out, x, mode):
    """`off` is bound in two separate ifs on a scalar argument, neither with an else; the read is
    under the same tests (numba compiles it, leaving the value unspecified on a path binding none)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        if mode == 1:
            off = 1
        if mode == 2:
            off = 2
        if mode == 1 or mode == 2:
            out[i] = x[(i + off) % x.shape[0]] * x[i]


@cuda.jit
def one_path_float(out, x):
    """A float bound on a thread-dependent path only, read under the same test."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        if x[i] > 0.0:
            s = math.sqrt(x[i])
        out[i] = x[i] * x[i]
        if x[i] > 0.0:
            out[i] += s


@cuda.jit
def elif_rows(out, a, b, pick):
    """`row` names a row of `a` or of `b` through an if/elif chain with no else."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        for k in range(a.shape[1]):
            if pick == 0:
                row = a[i]
            elif pick == 1:
                row = b[i]
            out[i] += row[k] * row[(k + 1) % a.shape[1]]


@cuda.jit
def store_read_back(out, x, last):
    """Thread i writes out[i, k] in a loop, reads it straight back and overwrites it; thread 0 also
    writes out[last[0], 0] (an index the analysis cannot tie to a thread), so out is not
    thread-owned."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        if i == 0:
            out[last[0], 0] = x[0, 0] * 2.0
        for k in range(1, out.shape[1]):
            out[i, k] = x[i, k] + x[i, k - 1]
            out[i, k] = math.exp(out[i, k] * 0.5)


@cuda.jit
def one_path_in_loop(out, x):
    """`last` is bound on one path of an `if` in a loop and read by the next statement: an iteration
    that binds nothing reads what an earlier iteration left (carried through the loop)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        for k in range(x.shape[1]):
            if x[i, k] > 0.0:
                last = x[i, k]
            if k > 0:
                out[i] += last * x[i, k]
