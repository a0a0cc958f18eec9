"""Device-side autodiff inside kernels (Enzyme.jl issue 2395 and relatives)."""
from numba import cuda

from harness import Active, Const, Duplicated, Forward, Reverse, autodiff


def f(A):
    """The function Enzyme.jl issue 2395 differentiates: A[0] *= A[0]."""
    A[0] *= A[0]


def df(A, dA):
    autodiff(Reverse, f, Duplicated(A, dA))


def df_forward(A, dA):
    autodiff(Forward, f, Duplicated(A, dA))


def add(s, a, b):
    """Enzyme.jl issue 230's f!: s[i] = a[i] + b[i]."""
    i = cuda.grid(1)
    if i < s.shape[0]:
        s[i] = a[i] + b[i]


def dadd(s, ds, a, da, b, db):
    autodiff(Reverse, add, Duplicated(s, ds), Duplicated(a, da), Duplicated(b, db))


def square_at(A, i):
    A[i] *= A[i]


def dsquare(A, dA):
    """KernelAbstractions PR 454 shape: each thread differentiates A[I] *= A[I] for its own I."""
    i = cuda.grid(1)
    if i < A.shape[0]:
        autodiff(Reverse, square_at, Duplicated(A, dA), Const(i))


def scaled_sum(x, a):
    return a * (x[0] + x[1])


def dscaled(x, dx, a, out):
    """Reverse with an Active scalar: the adjoint of a comes back from autodiff."""
    da, = autodiff(Reverse, scaled_sum, Duplicated(x, dx), Active(a))
    out[0] = da


def val_kernel(u, ghost):
    """Enzyme.jl issue 358's val_kernel!: the second argument carries no data (a Val{N})."""
    u[0] = u[0] * 2.0


def dval_kernel(u, du, ghost):
    autodiff(Reverse, val_kernel, Duplicated(u, du), Const(ghost))


def scale_first(A, a):
    """A[0] = a A[0] + a^2: an array updated in place and an Active scalar."""
    A[0] = A[0] * a + a * a


def dscale_first(A, dA, a, da_out):
    """Reverse with Duplicated(A, dA) and Active(a): dA receives J_A^T dA, a's adjoint comes back
    from autodiff and the kernel stores it in da_out[0]."""
    da, = autodiff(Reverse, scale_first, Duplicated(A, dA), Active(a))
    da_out[0] = da


def horner_at(y, c, x, i, n):
    """y[i] = c[n-1] x[i]^(n-1) + ... + c[1] x[i] + c[0] by Horner's rule: a loop whose trip count
    n is a runtime value, so the reverse sweep replays it from a per-thread tape."""
    acc = y[i] * 0.0
    for k in range(n - 1, -1, -1):
        acc = acc * x[i] + c[k]
    y[i] = acc


def dhorner(y, dy, c, dc, x, dx, n):
    """Each thread differentiates Horner's rule at its own element on the device, in reverse."""
    i = cuda.grid(1)
    if i < y.shape[0]:
        autodiff(Reverse, horner_at, Duplicated(y, dy), Duplicated(c, dc), Duplicated(x, dx), Const(i), Const(n))


def power_at(y, x, i, n):
    """y[i] = x[i]^n by repeated multiplication in a `while` loop counting to n."""
    p = x[i] * 0.0 + 1.0
    k = 0
    while k < n:
        p = p * x[i]
        k += 1
    y[i] = p


def dpower(y, dy, x, dx, n):
    i = cuda.grid(1)
    if i < y.shape[0]:
        autodiff(Reverse, power_at, Duplicated(y, dy), Duplicated(x, dx), Const(i), Const(n))


def ticket_rows_at(out, x, counter, i, n):
    """Atomic tickets two loops deep in a function differentiated on the device: the value log
    serves a device-side reverse as it serves a kernel's."""
    for a in range(n):
        for b in range(n):
            slot = cuda.atomic.add(counter, i, 1)
            out[slot] = x[i] * x[i] * (a + 1) - x[i] * b


def dticket_rows(out, dout, x, dx, counter, n):
    i = cuda.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, ticket_rows_at, Duplicated(out, dout), Duplicated(x, dx), Const(counter), Const(i), Const(n))
