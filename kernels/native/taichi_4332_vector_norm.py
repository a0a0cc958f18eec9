"""Native Taichi kernel from a public bug report: the gradient of a vector's squared norm at zero.

Source: https://github.com/taichi-dev/taichi/issues/4332 ("Unexpected behavior from differentiation
on vector norm()"), the report's kernel `ExampleClass.test` (code in the issue text; Taichi is
Apache-2.0). Reported on Taichi 1.0: the gradient was NaN where y[0, 0] - z is the zero vector
(norm(1e-5) instead of norm() avoided it); the derivative of |v|^2 there is finite.
Edits: the method of a `@ti.data_oriented` class reading its fields `self.x`, `self.y`, `self.z`,
`self.n` is a kernel taking them as ndarray parameters (DTYPE = ti.f64 as in the report; the 0-D
fields z and n are one-element ndarrays, `[None]` is `[0]`); the body is otherwise unchanged.
"""
import taichi as ti

DTYPE = ti.f64
vec2 = ti.types.vector(2, DTYPE)


@ti.kernel
def test(x: ti.types.ndarray(dtype=DTYPE, ndim=1), y: ti.types.ndarray(dtype=vec2, ndim=2),
         z: ti.types.ndarray(dtype=vec2, ndim=1), n: ti.types.ndarray(dtype=DTYPE, ndim=1)):
    z[0] += x[0] * y[0, 0]

    n[0] += x[0] * (y[0, 0] - z[0]).norm()**2

    # # change norm() to norm(1e-5) and the gradient is no longer NaN
    # n[0] += x[0] * (y[0, 0] - z[0]).norm(1e-5)**2
