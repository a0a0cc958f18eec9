"""Write-after-read: a kernel reads a value and later overwrites it."""
from numba import cuda


def loss_then_update(loss, x, b):
    """Warp issue 947: loss[0] = x[1] * b[0]; b[0] += 100. Expected dloss/dx[1] = b_in = 10."""
    loss[0] = x[1] * b[0]
    b[0] += 100.0


def square_in_place_first(A):
    """Measured on Warp 1.19: A[0] = A[0] * A[0] gave 18 instead of 6 for A = 3."""
    A[0] = A[0] * A[0]


def shift_left_in_place(A):
    """A[i] = 2 * A[i + 1]: thread i reads what thread i + 1 overwrites (a cross-thread race)."""
    i = cuda.grid(1)
    if i < A.shape[0] - 1:
        A[i] = 2.0 * A[i + 1]
