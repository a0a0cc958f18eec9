"""Integer arguments: indices and counts are never differentiable."""
from numba import cuda


def gather(out, x, idx):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[idx[i]]
