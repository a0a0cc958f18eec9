"""Kernels of the layout and aliasing cases (cases/layout-*.yaml, cases/alias-*.yaml).

Plain elementwise code, each thread owning its index, so that a failure in those cases is the
layout's or the aliasing's, never the kernel's.
"""
import math

from numba import cuda


def mul_sin(out, x, y):
    """out[i] = x[i] y[i] + sin(x[i]): x and y take the layouts under test."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * y[i] + math.sin(x[i])


def mul2d(out, x, c):
    """out[i, j] = x[i, j] c[i, j] + x[i, j]^2 over a 2-D grid (transposed and broadcast inputs)."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] * c[i, j] + x[i, j] * x[i, j]


def square_in_place(a):
    """a[i] = a[i]^2 + a[i]: read and written, so its shadow is both consumed and accumulated."""
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] = a[i] * a[i] + a[i]


def triple_product(out, x, y, z):
    """out[i] = x[i] y[i] z[i]: x and y may be one buffer passed twice."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * y[i] * z[i]
