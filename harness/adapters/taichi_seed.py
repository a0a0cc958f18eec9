"""The Taichi adapter's seeding kernel: L += <w, a> over a field, recorded on the tape after the
case's kernel, so that backpropagating from L gives a.grad = w before the kernel's own adjoint."""
import taichi as ti


@ti.kernel
def add_inner_product(loss: ti.template(), a: ti.template(), w: ti.template()):
    for I in ti.grouped(a):
        loss[None] += ti.cast(w[I] * a[I], ti.f64)
