"""Write-after-read: a kernel reads a value and later overwrites it."""
from numba import cuda


def loss_then_update(loss, x, b):
    """Warp issue 947: loss[0] = x[1] * b[0]; b[0] += 100. Expected dloss/dx[1] = b_in = 10."""
    loss[0] = x[1] * b[0]
    b[0] += 100.0


def square_in_place_first(A):
    """Measured on Warp 1.19: A[0] = A[0] * A[0] gave 18 instead of 6 for A = 3."""
    A[0] = A[0] * A[0]
