"""In-place updates: the value reverse mode needs is overwritten by the kernel itself."""
from numba import cuda


def square_first(A):
    """Enzyme.jl issue 2395's f: A[0] *= A[0] (dA <- 2 A dA in reverse)."""
    A[0] *= A[0]


def square_all(A):
    i = cuda.grid(1)
    if i < A.shape[0]:
        A[i] = A[i] * A[i]
