"""`@cuda.jit(max_registers=...)` (PyLops' non-stationary convolutions): a build option numba.cuda
accepts, that numba's CUDA simulator refused at the decorator, so the module could not be imported."""
from numba import cuda


@cuda.jit(max_registers=32)
def register_capped(out, x):
    """`@cuda.jit(max_registers=...)`, a build option numba.cuda accepts and its simulator did not."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * x[i]
