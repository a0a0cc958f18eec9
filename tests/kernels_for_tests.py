"""Kernels used only by the harness's own engine tests (tests/test_*.py).

A real module file, because the engine reads a kernel's source (and line numbers) from its file.
Lines that a test expects an error to point at carry a `# MARK: <name>` comment; the tests find the
line by that marker, so editing this file never silently shifts an expectation.

Math-family kernels write one function per output row (`out[k, i]`), so that a wrong rule shows up
in its own Jacobian rows and the oracles' worst entries name it.
"""
import math

import numpy as np
from numba import cuda


# ----------------------------------------------------------------------------- math families
# Input domains (the tests draw x and y in them): see DOMAINS_E2E in test_rules.py.

def trig_family(out, x, y):
    """x in (-0.8, 0.8), y in (0.5, 1.5)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        out[0, i] = math.sin(u)
        out[1, i] = math.cos(u)
        out[2, i] = math.tan(u)
        out[3, i] = math.asin(u)
        out[4, i] = math.acos(u)
        out[5, i] = math.atan(u)
        out[6, i] = math.atan2(u, v)
        out[7, i] = math.atan2(v, u + 2.0)
        out[8, i] = math.hypot(u, v)
        out[9, i] = math.degrees(u * v)
        out[10, i] = math.radians(40.0 * u)


def explog_family(out, x, y):
    """x in (0.5, 2), y in (0.5, 1.5)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        out[0, i] = math.exp(u)
        out[1, i] = math.exp2(u)
        out[2, i] = math.expm1(u)
        out[3, i] = math.log(u)
        out[4, i] = math.log2(u)
        out[5, i] = math.log10(u)
        out[6, i] = math.log1p(u)
        out[7, i] = math.sqrt(u)
        out[8, i] = math.ldexp(u, 2)
        out[9, i] = u ** v
        out[10, i] = math.pow(v, u)
        out[11, i] = u ** 3


def hyperbolic_family(out, x, y):
    """x in (-0.8, 0.8), y in (0.5, 1.5)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        out[0, i] = math.sinh(u)
        out[1, i] = math.cosh(u)
        out[2, i] = math.tanh(u)
        out[3, i] = math.asinh(u)
        out[4, i] = math.acosh(1.0 + v)
        out[5, i] = math.atanh(u)
        out[6, i] = math.erf(u)
        out[7, i] = math.erfc(u)


def arith_family(out, x, y):
    """x in (-2, -1) u (1, 2) (away from the kinks at 0 and of mod), y in (0.5, 1.5)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        w = u                             # copy
        out[0, i] = u + v
        out[1, i] = u - v
        out[2, i] = u * v
        out[3, i] = u / v
        out[4, i] = v / u
        out[5, i] = -w
        out[6, i] = (3.3 * u) % v
        out[7, i] = abs(u)
        out[8, i] = math.fabs(u)
        out[9, i] = min(u, v)
        out[10, i] = max(u, v)
        out[11, i] = math.copysign(v, u)
        out[12, i] = float(u * v)
        out[13, i] = u * u


def fmod_family(out, x, y):
    """As arith_family's domain. Its own kernel: its rule uses math.trunc (see test_rules.py)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[0, i] = math.fmod(3.3 * x[i], y[i])
        out[1, i] = math.remainder(3.3 * x[i], y[i])
        out[2, i] = math.nextafter(x[i] * y[i], 0.0)


# ----------------------------------------------------------------------------- the transform

def axpy(out, a, x, y):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]


def read_first(out, x):
    """Every thread reads x[0]."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[0] * float(i)


def stencil3(out, x):
    i = cuda.grid(1)
    if i >= 1 and i < x.shape[0] - 1:
        out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


def manual_global_index(out, x):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < x.shape[0]:
        out[i] = 2.0 * x[i]


def thread_index_only(out, x):
    """threadIdx.x alone repeats in every block: not thread-owned in a multi-block launch."""
    i = cuda.threadIdx.x
    if i < x.shape[0]:
        out[i] = 2.0 * x[i]


def affine_index(out, x):
    """x[2 i + 1] is injective; out[i] too."""
    i = cuda.grid(1)
    if 2 * i + 1 < x.shape[0]:
        out[i] = 3.0 * x[2 * i + 1]


def halved_index(out, x):
    """x[i // 2] is read by two threads."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 3.0 * x[i // 2]


def grid2_owned(out, x):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = 2.0 * x[i, j]


def grid2_transposed(out, x):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = 2.0 * x[j, i]


def grid2_row_index(out, x):
    """A 1-D index in a 2-D launch: every j of row i reads and writes element i."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < 4:
        out[i] = 2.0 * x[i]


def grid1_in_2d(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 2.0 * x[i]


def grid2_diagonal(out, x):
    """x[i, i] is shared by every j."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = 2.0 * x[i, i]


def square_into(out, x):
    """out is written, never read: DuplicatedNoNeed lets derivative kernels skip storing it."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * x[i]


def scale(out, alpha, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = alpha * x[i]


def branches(out, x, lo):
    """Reassignments in both branches of an if (phi at the join) and in one branch only."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        s = v
        if v > lo:
            r = v * v
            s = s + 1.0
        else:
            r = lo * v
        out[i] = r + s


def early_exit(out, x):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    v = x[i]
    if v < 0.0:
        out[i] = 0.0
        return
    out[i] = v * v


def square_first(A):
    """Enzyme.jl issue 2395: A[0] *= A[0]."""
    A[0] *= A[0]


def gather(out, x, idx):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[idx[i]]


def exp_map(out, x):
    """The gradient flows through exp alone: a zero exp rule makes it all zero."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.exp(x[i])


# ----------------------------------------------------------------------------- unsupported constructs

class _NotAFunction:
    pass


HELPER_OBJECT = _NotAFunction()
COUNTER = 0


def uses_try(out, x):
    i = cuda.grid(1)
    try:  # MARK: try
        out[i] = x[i]
    except IndexError:
        pass


def uses_with(out, x):
    i = cuda.grid(1)
    with open("never"):  # MARK: with
        out[i] = x[i]


def uses_lambda(out, x):
    i = cuda.grid(1)
    f = lambda v: 2.0 * v  # MARK: lambda  # noqa: E731
    out[i] = f(x[i])


def uses_global(out, x):
    global COUNTER  # MARK: global
    i = cuda.grid(1)
    out[i] = x[i]


def uses_slice(out, x):
    i = cuda.grid(1)
    if i < 2:
        out[i] = x[1:3]  # MARK: slice


def one_index_2d(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i]  # MARK: one-index


def calls_unknown(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = HELPER_OBJECT(x[i])  # MARK: unknown-call


def keyword_call(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = math.copysign(x[i], y=1.0)  # MARK: keyword


def returns_value(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i]
        return x[i]  # MARK: return-value


# ----------------------------------------------------------------------------- engine bugs (xfail)

def tmp_named_local(out, x):
    """A local whose name starts with `_t` (as `_tmp`) is taken for a lowering temporary."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        _tmp = x[i]
        y = _tmp
        out[i] = y * _tmp


def temp_named_locals(out, x):
    """Locals named like lowering temporaries (`_t4`..`_t7`) are overwritten by later temporaries."""
    _t4 = 2.0
    _t5 = 2.0
    _t6 = 2.0
    _t7 = 2.0
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * _t4 + _t5 * _t6 * _t7


def live_named_local(out, x):
    """A local named `_live` is the early-return flag's name: assigning it changes control flow."""
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    _live = 0.0
    if x[i] < -10.0:
        return
    out[i] = 2.0 * x[i] + _live


def polynomial(out, x, c):
    """Horner form with four coefficients read by every thread (uniform-index adjoint slots)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        out[i] = c[0] + t * (c[1] + t * (c[2] + t * c[3]))


# ----------------------------------------------------------------------------- rules: refusals and non-float functions

def uses_gamma(out, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.gamma(x[i])  # MARK: gamma


def uses_modf(out, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        f, n = math.modf(x[i])  # MARK: modf
        out[i] = f


def uses_log_base(out, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.log(x[i], 2.0)  # MARK: log-base


def uses_predicates_and_round(out, x):
    """isnan/isinf/isfinite and round carry no derivative; out = 2 x where x is finite."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        k = round(v * 0.0) + round(v, 3) * 0.0
        if math.isnan(v) or math.isinf(v) or not math.isfinite(v):
            out[i] = 0.0
        else:
            out[i] = 2.0 * v + k


def widen_with_scratch(out, x, n):
    """A loop whose carried `s` widens from int to float (so its body is lowered twice) and that
    allocates a local array in that body (tests/engine/test_pipeline.py)."""
    i = cuda.grid(1)
    s = 0
    for k in range(n):
        tmp = cuda.local.array(2, np.float64)
        tmp[0] = x[i] * k
        s += tmp[0]
    out[i] = s
