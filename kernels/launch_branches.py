"""Branches that never both run in one launch (harness/engine/analyses/launch_branches.py): an
`if` whose condition is the same in every thread and every time it is evaluated takes one branch
in a whole launch, so a write in one branch cannot race with a read in the other. Siblings whose
branches do meet in one launch (a condition that depends on the thread, the block, a loop
counter, or an array the kernel writes; both buffers written in the branch a launch takes) keep
the cross-thread write-after-read refusal."""
from numba import cuda


@cuda.jit
def swap_by_parity(a, b, x, step):
    """A launch writes `a` from b's right neighbour, or `b` from a's: never both."""
    i = cuda.grid(1)
    if i < x.shape[0] - 1:
        if step % 2 == 0:
            a[i] = b[i + 1] * x[i]
        else:
            b[i] = a[i + 1] * x[i]


@cuda.jit
def swap_by_flag_array(a, b, x, flags):
    """The choice read from an array the kernel never writes, at an index every thread computes
    alike, then a grid-stride loop in each branch."""
    if flags[0] > 0:
        for i in range(cuda.grid(1), x.shape[0] - 1, cuda.gridsize(1)):
            a[i] = b[i + 1] * x[i] + a[i]
    else:
        for i in range(cuda.grid(1), x.shape[0] - 1, cuda.gridsize(1)):
            b[i] = a[i + 1] * x[i] + b[i]


@cuda.jit
def swap_by_thread_parity(a, b, x, step):
    """Refused: the condition depends on the thread, so even threads write `a` while odd threads
    read a's elements (thread 1 reads a[2], which thread 2 writes)."""
    i = cuda.grid(1)
    if i < x.shape[0] - 1:
        if i % 2 == 0:
            a[i] = b[i + 1] * x[i]
        else:
            b[i] = a[i + 1] * x[i]


@cuda.jit
def swap_by_block_parity(a, b, x, step):
    """Refused: the condition depends on the block, so the blocks of one launch take both branches."""
    i = cuda.grid(1)
    if i < x.shape[0] - 1:
        if cuda.blockIdx.x % 2 == 0:
            a[i] = b[i + 1] * x[i]
        else:
            b[i] = a[i + 1] * x[i]


@cuda.jit
def swap_in_a_loop(a, b, x, n):
    """Refused: the condition is the same in every thread but changes with the loop's counter, so
    one launch runs both branches (one per iteration)."""
    i = cuda.grid(1)
    if i < x.shape[0] - 1:
        for k in range(n):
            if k % 2 == 0:
                a[i] = b[i + 1] * x[i]
            else:
                b[i] = a[i + 1] * x[i]


@cuda.jit
def swap_by_written_flag(a, b, x, flags):
    """Refused: the choice reads an element the kernel itself writes (`a[0]`), which another thread
    may have changed before this one reads it, so threads may choose differently."""
    i = cuda.grid(1)
    if i < x.shape[0] - 1:
        if a[0] > 0:
            a[i] = b[i + 1] * x[i]
        else:
            b[i] = a[i + 1] * x[i]


@cuda.jit
def both_written_in_one_branch(a, b, x, step):
    """Refused: the branch a launch takes writes both buffers and reads a neighbour of one."""
    i = cuda.grid(1)
    if i < x.shape[0] - 1:
        if step % 2 == 0:
            a[i] = b[i + 1] * x[i]
            b[i] = 2.0 * x[i]
        else:
            a[i] = x[i]
