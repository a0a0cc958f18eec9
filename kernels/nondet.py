"""Kernels of the nondeterminism cases (cases/nondet-*.yaml): one whose result depends on thread
scheduling, one whose result silently depends on the block size."""
from numba import cuda, float64


def compact_by_counter(out, x, w, counter):
    """Stream compaction through an atomic counter, a common GPU idiom: each thread takes the next
    free slot (`slot = atomic.add(counter, 0, 1)`) and writes out[slot] = w[slot] * x[i]^2. Slots
    are handed out in whatever order threads reach the atomic, so which x lands where, and with
    which weight, changes from launch to launch."""
    i = cuda.grid(1)
    cuda.syncthreads()
    if i < x.shape[0]:
        slot = cuda.atomic.add(counter, 0, 1)
        out[slot] = w[slot] * x[i] * x[i]


def block_sum_assumes_8(out, x):
    """out[0] += sum(x^2), with a shared-memory tree reduction written for 8-thread blocks: with
    larger blocks, threads 8 and up are silently dropped. Correct only at block 8."""
    sh = cuda.shared.array(8, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = x[i] * x[i]
    if t < 8:
        sh[t] = v
    cuda.syncthreads()
    for s in (4, 2, 1):
        if t < s:
            sh[t] += sh[t + s]
        cuda.syncthreads()
    if t == 0:
        cuda.atomic.add(out, 0, sh[0])
