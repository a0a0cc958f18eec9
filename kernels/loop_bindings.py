"""Names first bound inside a dynamic loop's body and read after the loop, where Python (and numba)
give them the last iteration's value. The reverse sweep must see that value's dependence on the
last iteration: before the fix the engine read the name after the loop as a value of the body that
no adjoint reached, and the reverse gradient was zero."""
import math

from numba import cuda


@cuda.jit
def for_binding(out, x, n):
    i = cuda.grid(1)
    if i < out.shape[0]:
        for k in range(n):
            y = x[i] * x[i] * (k + 1)
        out[i] = y


@cuda.jit
def while_binding(out, x, n):
    i = cuda.grid(1)
    if i < out.shape[0]:
        k = 0
        while k < n:
            y = math.sin(x[i] * (k + 1))
            z = y * x[i]
            k += 1
        out[i] = y + z


@cuda.jit
def conditional_binding(out, x, n):
    # bound only in the iterations that pass the test; the value read is the last one bound
    i = cuda.grid(1)
    if i < out.shape[0]:
        y = 0.0
        for k in range(n):
            if k % 2 == 0:
                t = x[i] * (k + 1)
            y += x[i]
        out[i] = t * y


@cuda.jit
def nested_binding(out, x, n):
    # bound in the inner loop, read after the outer one
    i = cuda.grid(1)
    if i < out.shape[0]:
        for j in range(n):
            for k in range(n):
                y = x[i] * (j + 1) + math.exp(x[i] * k)
        out[i] = y * y


@cuda.jit
def break_binding(out, x, n):
    # bound before a break that leaves the loop early
    i = cuda.grid(1)
    if i < out.shape[0]:
        for k in range(n):
            y = x[i] * (k + 2)
            if y * y > 4.0:
                break
        out[i] = y
