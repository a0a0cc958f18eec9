"""Loop-carried state (Warp issue 1694: values defined before a dynamic loop)."""
import math

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


# ---------------------------------------------------------------- loops the reverse sweep recomputes
# Loops that only compute registers: the reverse sweep rebuilds each iteration's entry registers by
# replaying the loop from its entry values (docs/engine.md, Loops) instead of reading a tape.

def shrink_until(out, x, level):
    """A while loop whose exit depends on the data: y = a / (1/a + k) after k steps of
    y <- y a / (y + a), until it is below level (no step at all where a * a <= level already)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        a = x[i]
        y = a * a
        while y > level:
            y = y * a / (y + a)
        out[i] = y * a


def shrink_until_break(out, x, level, cap):
    """The same loop as a counted while with a data-dependent break."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        a = x[i]
        y = a * a
        k = 0
        while k < cap:
            y = y * a / (y + a)
            if y < level:
                break
            k += 1
        out[i] = y * a + k


def skip_negative_sin(out, x, w, n):
    """continue in a loop whose body is not linear in its carried register."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = 0.0
        for k in range(n):
            if w[k] < 0.0:
                continue
            s = math.sin(s) * w[k] + x[i]
        out[i] = s


def rotate_scale(out, x, c, n):
    """Two carried registers updated together (each new value reads both old ones)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        u = 1.0
        v = 0.0
        for k in range(n):
            u, v = u * t - v * c[k], u * c[k] + v * t
        out[i] = u + 2.0 * v


def loop_in_branch(out, x, c, n):
    """A dynamic loop on one side of a branch only."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        acc = t
        if i % 2 == 0:
            for k in range(n):
                acc = math.sin(acc) * t + c[k]
        else:
            acc = acc * acc
        out[i] = acc


def triangular_nested(out, x, c, n):
    """Nested dynamic loops, the inner trip count set by the outer counter (0 for j = 0); both
    only compute registers, so both are recomputed."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        acc = 0.0
        for j in range(n):
            inner = c[j]
            for k in range(j):
                inner = inner * t + c[k]
            acc = acc * 0.5 + inner * t
        out[i] = acc


def rows_of_powers(out, x, n, m):
    """Nested dynamic loops where the outer one stores a row entry per iteration: the outer loop
    is taped, the inner one (registers only) recomputed inside each replayed outer iteration."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        s = 0.0
        for j in range(n):
            p = 1.0
            for k in range(m):
                p = p * t + 0.5 * s
            s = s + p
            out[i, j] = s


def coupled_pair(out, x, y, c, n):
    """Two carried registers, each starting from an input and each updated from both: the
    reverse through the loop's Jacobian has k = 2 live-ins (u's and v's entry values) and m = 2
    results."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        u = x[i]
        v = y[i]
        for k in range(n):
            u, v = u + 0.25 * math.sin(v) * c[k], v - 0.25 * math.sin(u) * c[k]
        out[i] = u * v


def unused_register(out, x, c, n):
    """Two carried registers of which only acc is used after the loop: peak's adjoint is zero,
    so its row of the loop's Jacobian must contribute nothing."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        acc = t
        peak = t
        for k in range(n):
            acc = acc * 0.5 + math.cos(t * c[k])
            peak = max(peak, acc * t)
        out[i] = acc


def last_term(out, x, c, n):
    """A register the loop overwrites without reading: after zero trips it keeps its entry value
    (d last / d entry = 1), after one or more it is the last term (d last / d entry = 0)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        last = t * t
        s = 0.0
        for k in range(n):
            last = math.sin(t * c[k])
            s = s + last
        out[i] = last + s


def skip_negative_sin_hoisted(out, x, w, n):
    """skip_negative_sin with x[i] read once before the loop: the loop then reads only w (Const
    in the cases), so its reverse can go through its Jacobian; continue skips terms."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        s = 0.0
        for k in range(n):
            if w[k] < 0.0:
                continue
            s = math.sin(s) * w[k] + t
        out[i] = s


def powers_of_scaled(out, x, c, n, m):
    """An outer loop that reads x[i] (an active array: recomputed or taped) around an inner loop
    that only reads Const c (its reverse goes through its Jacobian, rebuilt in each replayed outer
    iteration from the values that iteration had)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = 0.0
        for j in range(n):
            t = x[i] * c[j]
            p = t
            for k in range(m):
                p = p * t + c[k]
            s = s + math.sin(p)
        out[i] = s


def inplace_lower_solve(L, b, m):
    """Each thread solves L y = b for its own row of right-hand sides, in place (forward
    substitution): b[i, r] -= L[r, c] b[i, c] for c < r, then b[i, r] /= L[r, r]. The inner loop
    reads elements of b the kernel has already overwritten."""
    i = cuda.grid(1)
    if i < b.shape[0]:
        for r in range(m):
            for c in range(r):
                b[i, r] -= L[r, c] * b[i, c]
            b[i, r] = b[i, r] / L[r, r]


def ticket_cube(out, x, counter, n):
    """Atomics' old values two and three loops deep: each thread takes n^2 (n + 1) tickets from
    its own counter and scatters one term to each (the middle loop's ticket comes before the
    innermost loop's, so replaying the innermost loop must skip past it in the log)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        for a in range(n):
            for b in range(n):
                first = cuda.atomic.add(counter, i, 1)
                out[first] = x[i] * x[i] * (a - b)
                for c in range(n):
                    slot = cuda.atomic.add(counter, i, 1)
                    out[slot] = x[i] * (a + 1) + x[i] * x[i] * (b - c)
