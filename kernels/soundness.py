"""Engine soundness reproducers: aliasing at every entry point, device-side autodiff
running the host's analyses, atomic old values in loops, early returns in helpers, ownership over
index sets."""
import math

from numba import cuda, float64

from harness import Const, Duplicated, Forward, Reverse, autodiff


# ----------------------------------------------------------------------------- aliasing

def axpy_into(out, x, y):
    """out[i] = 2 x[i] + y[i]: with out and x one buffer, buf[i] = 2 buf[i] + y[i]."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 2.0 * x[i] + y[i]


def daxpy_same_name(A, dA, y, dy):
    """The same buffer and shadow passed twice to device-side autodiff."""
    autodiff(Reverse, axpy_into, Duplicated(A, dA), Duplicated(A, dA), Duplicated(y, dy))


def daxpy_two_params(A, dA, B, dB, y, dy):
    """Two kernel parameters that the launch may bind to one buffer (and one shadow)."""
    autodiff(Reverse, axpy_into, Duplicated(A, dA), Duplicated(B, dB), Duplicated(y, dy))


# ----------------------------------------------------------------------------- device-side analyses

def square_via_const(tmp, x, out):
    """tmp is scratch: x^2 goes through it, so marking it Const drops d(x^2)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        tmp[i] = x[i] * x[i]
        out[i] = 3.0 * tmp[i]


def dsquare_via_const(tmp, x, dx, out, dout):
    autodiff(Forward, square_via_const, Const(tmp), Duplicated(x, dx), Duplicated(out, dout))


def dsquare_via_const_reverse(tmp, x, dx, out, dout):
    autodiff(Reverse, square_via_const, Const(tmp), Duplicated(x, dx), Duplicated(out, dout))


def shift_left(A):
    """A[i] = 2 A[i + 1]: a cross-thread write-after-read."""
    i = cuda.grid(1)
    if i < A.shape[0] - 1:
        A[i] = 2.0 * A[i + 1]


def dshift_left(A, dA):
    autodiff(Reverse, shift_left, Duplicated(A, dA))


def local_scratch(A):
    """A local array inside the differentiated function."""
    i = cuda.grid(1)
    if i < A.shape[0]:
        t = cuda.local.array(2, float64)
        t[0] = A[i] * A[i]
        t[1] = math.sin(A[i])
        A[i] = t[0] * t[1]


def dlocal_scratch(A, dA):
    autodiff(Reverse, local_scratch, Duplicated(A, dA))


def dlocal_scratch_forward(A, dA):
    autodiff(Forward, local_scratch, Duplicated(A, dA))


def shared_neighbour(A, out):
    """A shared array inside the differentiated function: out[i] = A[i] * A[i+1 within the block]."""
    s = cuda.shared.array(32, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = A[i]
    cuda.syncthreads()
    out[i] = s[t] * s[(t + 1) % 32]


def dshared_neighbour(A, dA, out, dout):
    autodiff(Reverse, shared_neighbour, Duplicated(A, dA), Duplicated(out, dout))


def dshared_neighbour_forward(A, dA, out, dout):
    autodiff(Forward, shared_neighbour, Duplicated(A, dA), Duplicated(out, dout))


# ----------------------------------------------------------------------------- atomic old values in loops

def scatter_by_ticket(out, x, counter, n):
    """Each thread takes tickets from its own counter in a loop; the old value picks the output slot."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        for k in range(n):
            slot = cuda.atomic.add(counter, i, 1)
            out[slot] = x[i] * x[i] * (k + 1)


def weight_by_ticket(out, x, counter, n):
    """The old counter value used as a value (a weight), not an index."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        acc = 0.0
        for k in range(n):
            old = cuda.atomic.add(counter, i, 1)
            acc += x[i] * x[i] * (old + 1)
        out[i] = acc


def scatter_by_ticket_nested(out, x, counter, n):
    """The same in a nested loop: the inner loop is replayed inside each outer iteration."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        for a in range(n):
            for b in range(n):
                slot = cuda.atomic.add(counter, i, 1)
                out[slot] = x[i] * x[i] * (a + b + 1)


def lane_rotate_loop(out, x, n):
    """A warp shuffle inside a dynamic loop: each iteration rotates the values one lane down."""
    i = cuda.grid(1)
    v = x[i]
    acc = 0.0
    for k in range(n):
        v = cuda.shfl_down_sync(0xFFFFFFFF, v, 1) * 0.5 + v * v * 0.25
        acc += v
    out[i] = acc


# ----------------------------------------------------------------------------- early returns in helpers

@cuda.jit(device=True)
def clipped(v):
    if v > 1.0:
        return 1.0 + 0.1 * v
    return v * v


@cuda.jit(device=True)
def sorted_pair(a, b):
    if a < b:
        return a, b
    return b, a


def apply_clipped(out, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = clipped(x[i]) * x[i]


def apply_sorted_pair(out, x, y):
    i = cuda.grid(1)
    if i < x.shape[0]:
        lo, hi = sorted_pair(x[i], y[i])
        out[i] = lo * hi * hi


def clip_into(out, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        if x[i] > 1.0:
            out[i] = 1.0 + 0.1 * x[i]
            return
        out[i] = x[i] * x[i]


def clip_value(x, i):
    """A differentiated device function whose value comes from an early return."""
    if x[i] > 1.0:
        return 1.0 + 0.1 * x[i]
    return x[i] * x[i]


def dclip_value(x, dx, y, dy):
    """y = clip_value(x) and its tangent from device-side autodiff of a value-returning function."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        y[i] = clip_value(x, i)
        dy[i] = autodiff(Forward, clip_value, Duplicated(x, dx), Const(i))


def store_clipped(x, y):
    i = cuda.grid(1)
    if i < x.shape[0]:
        y[i] = clipped(x[i]) * x[i]


def dstore_clipped(x, dx, y, dy):
    autodiff(Reverse, store_clipped, Duplicated(x, dx), Duplicated(y, dy))


def dstore_clipped_forward(x, dx, y, dy):
    autodiff(Forward, store_clipped, Duplicated(x, dx), Duplicated(y, dy))


def dclip_into_reverse(out, dout, x, dx):
    autodiff(Reverse, clip_into, Duplicated(out, dout), Duplicated(x, dx))


# ----------------------------------------------------------------------------- ownership over index sets

def euler_step(pos, vel, dt):
    """Thread i reads and writes the three components of its own particle."""
    i = cuda.grid(1)
    if i < pos.shape[0]:
        px = pos[i, 0]
        py = pos[i, 1]
        pz = pos[i, 2]
        pos[i, 0] = px + dt * vel[i, 0] * py
        pos[i, 1] = py + dt * vel[i, 1] * pz
        pos[i, 2] = pz + dt * vel[i, 2] * px


def row_recurrence(x, a, n):
    """x[k, j + 1] = f(x[k, j]) along thread k's own row."""
    k = cuda.grid(1)
    if k < x.shape[0]:
        for j in range(n):
            x[k, j + 1] = a[k] * math.sin(x[k, j]) + x[k, j]


def thread0_scan(x, a):
    """Only thread 0 touches the arrays: a sequential running product."""
    i = cuda.grid(1)
    if i == 0:
        for k in range(1, x.shape[0]):
            x[k] = x[k - 1] * a[k] + x[k]


def dthread0_scan(x, dx, a, da):
    autodiff(Reverse, thread0_scan, Duplicated(x, dx), Duplicated(a, da))



def scan6(x, a):
    """A sequential running product over six elements (a static loop), no guard of its own."""
    for k in range(1, 6):
        x[k] = x[k - 1] * a[k] + x[k]


def dscan6_thread0(x, dx, a, da):
    """Only thread 0 differentiates: the guard at the call site pins the function's accesses."""
    i = cuda.grid(1)
    if i == 0:
        autodiff(Reverse, scan6, Duplicated(x, dx), Duplicated(a, da))


def dscan6_every_thread(x, dx, a, da):
    """Every thread differentiates the same scan: a cross-thread race, refused."""
    autodiff(Reverse, scan6, Duplicated(x, dx), Duplicated(a, da))
