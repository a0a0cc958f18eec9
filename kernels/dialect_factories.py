"""Kernels made by factory functions, as tutorials and libraries write them: the factory's locals
(a tile size, coefficients, a device function it defines) are read by the kernel as closure
variables, which numba.cuda freezes into the kernel as constants when it compiles, and the kernel
carries `launch_bounds` from them. Module-level names bind the factories' results for the cases."""
import numpy as np
from numba import cuda


def make_tiled_sum(tile=8):
    half = tile // 2

    @cuda.jit(launch_bounds=(tile, 1))
    def tiled_sum(out, x, scale):
        sm = cuda.shared.array(shape=(tile,), dtype=np.float64)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        sm[t] = x[i] * scale
        cuda.syncthreads()
        s = 0.0
        for k in range(half):
            s += sm[k] * sm[k + half]
        out[i] = s + sm[(t + 1) % tile]
    return tiled_sum


def make_polynomial(c0, c1, c2):
    @cuda.jit(device=True)
    def horner(v):
        return c0 + v * (c1 + v * c2)

    @cuda.jit
    def polynomial(out, x):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = horner(x[i])
    return polynomial


tiled_sum_8 = make_tiled_sum()
tiled_sum_4 = make_tiled_sum(4)
polynomial = make_polynomial(0.5, -1.25, 0.75)
