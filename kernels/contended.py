"""Adjoint updates that many threads of a block make to one element at the same moment.

Reverse mode must accumulate them atomically. The contended update comes right after a barrier, so
every thread of the block reaches it together: a missing atomic loses updates reliably, on a GPU and
on the simulator with interleaved threads (docs/mutations.md).
"""
from numba import cuda, float64


def broadcast_through_shared(out, a, x):
    """Thread 0 stages a[0] in shared memory; after the barrier every thread reads it:
    out[i] = a[0] * x[i], so da[0] = sum(dout * x) through the shared shadow dsh[0]."""
    sh = cuda.shared.array(1, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if t == 0:
        sh[0] = a[0]
    cuda.syncthreads()
    if i < out.shape[0]:
        out[i] = sh[0] * x[i]


def scale_by_first_in_step(out, a, x):
    """Enzyme issue 2199's kernel with the block's threads in step: a barrier, then every thread
    reads a[0] (global memory), so da[0] gets one update per thread at once."""
    i = cuda.grid(1)
    cuda.syncthreads()
    if i < out.shape[0]:
        out[i] = a[0] * x[i]



def sum_squares_in_step(total, x):
    """A barrier, then every thread adds x[i]^2 to total[0] at once: the forward mode's tangent
    update d_total[0] += 2 x[i] dx[i] is contended exactly like the primal's atomic."""
    i = cuda.grid(1)
    cuda.syncthreads()
    if i < x.shape[0]:
        cuda.atomic.add(total, 0, x[i] * x[i])
