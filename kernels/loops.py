"""Loop-carried state (Warp issue 1694: values defined before a dynamic loop)."""
from numba import cuda


def weighted_sum_dynamic(out, x, w, n):
    i = cuda.grid(1)
    if i < x.shape[0]:
        g = x[i] * x[i]
        s = 0.0
        for k in range(n):
            s += w[k]
        out[i] = g * s


def weighted_sum_static(out, x, w):
    """The static twin: the trip count is a literal, so the loop is unrolled."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        g = x[i] * x[i]
        s = 0.0
        for k in range(5):
            s += w[k]
        out[i] = g * s


def running_product_dynamic(out, x, n):
    """Warp's running product over a dynamic range gave [32, 8, 2] instead of [4, 4, 4]."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        p = 1.0
        for k in range(n):
            p = p * x[i]
        out[i] = p


def running_product_static(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        p = 1.0
        for k in range(3):
            p = p * x[i]
        out[i] = p


def newton_sqrt(out, x, iters):
    """A while loop with a data-independent trip count: Newton iterations for sqrt(x)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        a = x[i]
        y = 1.0 + a
        k = 0
        while k < iters:
            y = 0.5 * (y + a / y)
            k += 1
        out[i] = y


def first_crossing(out, x, w, n, level):
    """break: accumulate w[k] * x[i] until the running sum exceeds a level."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = 0.0
        for k in range(n):
            if s > level:
                break
            s += w[k] * x[i]
        out[i] = s


def skip_negative(out, x, w, n):
    """continue: terms with a negative weight are skipped."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = 0.0
        for k in range(n):
            if w[k] < 0.0:
                continue
            s += w[k] * x[i] * x[i]
        out[i] = s


def matvec_nested(y, A, x, n, m):
    """Nested dynamic loops: y[i] = sum_j sum_k A[i, j] * x[j] * x[k] / m."""
    i = cuda.grid(1)
    if i < y.shape[0]:
        acc = 0.0
        for j in range(n):
            inner = 0.0
            for k in range(m):
                inner += x[k]
            acc += A[i, j] * x[j] * inner / m
        y[i] = acc


def matvec_nested_static(y, A, x):
    i = cuda.grid(1)
    if i < y.shape[0]:
        acc = 0.0
        for j in range(4):
            inner = 0.0
            for k in range(4):
                inner += x[k]
            acc += A[i, j] * x[j] * inner / 4
        y[i] = acc


def accumulate_in_place(x, y, n):
    """Taichi issue 8356: for i in x: for j in y: x[i] += y[j] (x read and written in the loop)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        for j in range(n):
            x[i] += y[j] * x[i] * 0.1


def accumulate_in_place_static(x, y):
    i = cuda.grid(1)
    if i < x.shape[0]:
        for j in range(3):
            x[i] += y[j] * x[i] * 0.1


def newton_sqrt_static(out, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        a = x[i]
        y = 1.0 + a
        for k in range(6):
            y = 0.5 * (y + a / y)
        out[i] = y


def first_crossing_static(out, x, w, level):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = 0.0
        for k in range(8):
            if s > level:
                break
            s += w[k] * x[i]
        out[i] = s


def skip_negative_static(out, x, w):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = 0.0
        for k in range(6):
            if w[k] < 0.0:
                continue
            s += w[k] * x[i] * x[i]
        out[i] = s
