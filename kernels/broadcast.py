"""Scalar device functions for the broadcast/map front end (harness/broadcast/frontend.py).

A case with `launch: {style: broadcast}` names one of these as its `kernel:`; the front end
generates the elementwise kernel around it (`dest[idx] = f(a0[...], a1, ...)`). Type and function
operands (`convert_to(T, a)` with T = numpy.float64, `apply(g, a)` with a closure g) are folded
into the generated kernel as constants unless `engine: {fold_constants: false}`.

Plain Python functions: the front end compiles them as inlined device functions. `call_first`, at
the end, is an ordinary kernel (CUDA.jl issue 2514's reduced example).
"""
import numpy


def add(x, y):
    """`x .+ y` (GPUArrays.jl issue 535)."""
    return x + y


def mul(a, b):
    return a * b


def axpy(a, x, y):
    return a * x + y


def convert_to(T, a):
    """`convert.(T, x)` / `T.(x)`: a type among the broadcast operands (GPUArrays.jl PR 539)."""
    return T(a)


def apply(g, a):
    """`g.(x)` written as a broadcast of `apply` over a function operand g."""
    return g(a)


def apply_add(g, a, b):
    return g(a) + b


# ----------------------------------------------------------------------------- closures over types

class Bar:
    """A Julia-style struct type (`struct Bar{T} a::T end`). numba cannot construct it on the
    device, so it only appears where the launch is refused before compiling."""

    def __init__(self, a):
        self.a = a


def capture_type(capture):
    """`closure(arg) = capture(arg) * 2` over a type, as in CUDA.jl issue 2514's reduced example
    (`capture = Bar; closure(arg) = capture(arg)`). The closure is not isbits: it carries the
    type in its captured variable `capture`."""
    def closure(arg):
        return capture(arg) * 2
    return closure


# The case loader finds `function:` references by parsing top-level `def`s without importing the
# file, so each closure that a case names is declared as a def first and then rebound to the real
# closure; the def documents what the closure computes.

def float32_twice(arg):
    """Rebound below to `capture_type(numpy.float32)`: numpy.float32(arg) * 2."""
    return numpy.float32(arg) * 2


float32_twice = capture_type(numpy.float32)


def bar_closure(arg):
    """Rebound below to `capture_type(Bar)`: the closure of CUDA.jl issue 2514 itself."""
    return Bar(arg) * 2


bar_closure = capture_type(Bar)


class Holder:
    """A host object whose attribute `.f` holds a type: `.f is of type Type{Bar}`."""

    def __init__(self, f=Bar, scale=2.0):
        self.f = f
        self.scale = scale


# ----------------------------------------------------------------------------- a kernel-style seed

def call_first(out, f, x):
    """CUDA.jl issue 2514's reduced kernel, `kernel(f, x) = f(x[])`: a function as an argument."""
    out[0] = f(x[0])
