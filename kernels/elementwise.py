"""Elementwise kernels: one thread per element, each thread owns its output."""
import math

from numba import cuda


def axpy(out, a, x, y):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]


def polynomial(out, x, c):
    """Horner form of c0 + c1 x + c2 x^2 + c3 x^3 with coefficients read by every thread."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        out[i] = c[0] + t * (c[1] + t * (c[2] + t * c[3]))


def math_heavy(out, x, y):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    u = x[i]
    v = y[i]
    s = math.sin(u) * math.exp(0.5 * v) + math.log(1.0 + u * u) - math.sqrt(2.0 + math.cos(v))
    s += math.tanh(u * v) + math.erf(u) + (1.5 + v * v) ** 1.5 + math.atan2(u, 2.0 + v)
    s += math.hypot(u, v) + abs(u - v) + min(u, v) * max(u, 0.25) + math.pow(2.0 + u, 0.5)
    out[i] = s / (1.0 + math.fabs(v))


def scale(out, alpha, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = alpha * x[i]


def lgamma_map(out, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.lgamma(x[i])


def out_of_bounds(out, x):
    """Writes far past the end of `out`: an illegal address on the GPU, an IndexError in the simulator."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i + 1099511627776] = x[i]      # 2**40 elements past the end: unmapped on any GPU


def mixed_precision(out, x, y):
    """float32 x times float64 y into float64 out: numba computes in float64."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * y[i] + math.sin(y[i])


def horner_dynamic(out, x, c, n):
    """Horner's rule with a runtime trip count: a dynamic loop whose reverse needs a tape."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        t = x[i]
        acc = 0.0
        for k in range(n):
            acc = acc * t + c[k]
        out[i] = acc
