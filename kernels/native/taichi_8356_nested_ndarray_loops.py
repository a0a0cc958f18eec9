"""Native Taichi kernel from a public bug report: an ndarray loop nested in a parallel ndarray loop.

Source: https://github.com/taichi-dev/taichi/issues/8356 ("Possibly incorrect gradients from
autodiff"), the report's own kernel `foo` (code in the issue text; Taichi is Apache-2.0). Reported
on Taichi 1.7.0: with x.grad = 1, foo.grad gave y.grad = [1, 1, 1] where each y[j] is added into
all five x[i] (the commented-out form, through a local accumulator, gave the right [5, 5, 5]).
Edits: none (the report passed torch tensors; the harness passes Taichi ndarrays).
"""
import taichi as ti


@ti.kernel
def foo(x: ti.types.ndarray(), y: ti.types.ndarray()):
    for i in x:
        # a = 0.0
        # for j in y:
        #     a += y[j]
        # x[i] += a
        for j in y:
            x[i] += y[j]
