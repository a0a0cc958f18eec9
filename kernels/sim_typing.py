"""Float constants that float32 cannot hold, meeting float32 values: where the simulator's
arithmetic and numba's typing part ways. numba types a Python float as float64, so
`C * x[i]` with x float32 is a float64 product on a GPU; the simulator runs the kernel with
NumPy's scalar rules (NEP 50), which round C to float32 first. Within float32's range that costs
a rounding; below it (TARDIS's blackbody coefficient 2 H C_INV^2 = 1.47e-47) C becomes 0.0."""
from numba import cuda

TINY = 2.0e-47          # below float32's smallest subnormal (1.4e-45)


@cuda.jit
def tiny_coefficient(out, x):
    """TARDIS's blackbody in small: nu = 1e15 x, then TINY * nu * nu * nu (0.02 x^3 where numba
    computes it in float64; 0 on the simulator in float32, which rounds TINY to 0.0 first)."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        nu = x[i] * 1.0e15
        out[i] = TINY * nu * nu * nu + x[i]
