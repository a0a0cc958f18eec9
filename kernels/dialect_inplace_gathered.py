"""Elements updated in place at positions read from integer arrays (`wfp[b, sz, sx] += ...` of a
wave code's source injection, FBPIC's guard-cell adds): the read of `a[k]` is the element this
thread's own store then replaces, so another thread could change it only by racing with that store
(harness/engine/analyses/ownership.py, own_element_updates). A read of another element of an array
the kernel writes stays refused."""
from numba import cuda


@cuda.jit
def scatter_add(a, idx, v):
    """a[idx[i]] += v[i] * v[i] at distinct gathered positions."""
    i = cuda.grid(1)
    if i < idx.shape[0]:
        k = idx[i]
        a[k] += v[i] * v[i]


@cuda.jit
def scatter_scale(a, idx, f):
    """a[idx[i], 1] *= f[i]: the update's derivative needs the element's old value."""
    i = cuda.grid(1)
    if i < idx.shape[0]:
        a[idx[i], 1] *= f[i]


@cuda.jit
def two_regions(grid, buf, n):
    """FBPIC's pattern: each thread adds into a row at the left and one at the right end; the rows
    are disjoint when the array is long enough, which the kernel's indices do not prove."""
    iz, ir = cuda.grid(2)
    nz = grid.shape[0]
    if iz < n and ir < grid.shape[1]:
        grid[iz, ir] += buf[0, iz, ir]
        grid[nz - n + iz, ir] += buf[1, iz, ir]


@cuda.jit
def neighbour_read(a, idx, v):
    """Reads the element after the one it writes: another thread's write may land there (refused)."""
    i = cuda.grid(1)
    if i < idx.shape[0]:
        k = idx[i]
        a[k] = a[k + 1] + v[i]
