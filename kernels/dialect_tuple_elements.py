"""One element of a tuple-valued expression, read in place: `f(...)[k]` of a device function's tuple
result and `(a, b)[k]` of a tuple literal (numba evaluates the whole tuple and takes the element)."""
import math

from numba import cuda


@cuda.jit(device=True, inline=True)
def sum_and_product(u, v):
    return u + v, u * v


@cuda.jit(device=True)
def polar(x, y):
    return math.sqrt(x * x + y * y), math.atan2(y, x)


@cuda.jit
def call_element(out, x, c):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = sum_and_product(x[i], c[0])[1] + sum_and_product(x[i], x[i])[0]


@cuda.jit
def call_element_negative(out, x, y):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = polar(x[i], y[i])[-2] * polar(x[i], y[i])[-1]


@cuda.jit
def call_element_in_branches(out, x, c):
    i = cuda.grid(1)
    if i < out.shape[0]:
        # only the branch taken evaluates its call
        out[i] = sum_and_product(x[i], c[0])[1] if x[i] > 0 else sum_and_product(x[i], c[1])[0] * x[i]


@cuda.jit
def literal_element(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = (x[i], x[i] * x[i], math.sin(x[i]))[2] + (x[i] * 3.0, x[i])[0]


@cuda.jit(device=True)
def scaled_product(u, v):
    return 2.0 * sum_and_product(u, v)[1] + polar(u, v)[0]


@cuda.jit
def element_inside_device_function(out, x, y):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = scaled_product(x[i], y[i])
