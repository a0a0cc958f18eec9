"""Array names bound in the branches of an `if` statement (STUMPY's parity ping-pong:
`if j % 2 == 0: out = even; inp = odd` / `else: out = odd; inp = even`), the statement form of
`out = even if c else odd`: the rest of the block is lowered once per branch
(harness/engine/frontend/lower_stmts.py, array_binding_branches)."""
from numba import cuda


@cuda.jit
def parity_ping_pong(even, odd, x, j):
    i = cuda.grid(1)
    if j % 2 == 0:
        out = even
        inp = odd
    else:
        out = odd
        inp = even
    if i < out.shape[0]:
        out[i] = inp[i] * x[i] + inp[i] * inp[i]


@cuda.jit
def parity_ping_pong_grid_stride(even, odd, x, j):
    """STUMPY's shape: the grid-stride loop after the bindings, so each branch has its own copy."""
    if j % 2 == 0:
        out = even
        inp = odd
    else:
        out = odd
        inp = even
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = inp[i] * x[i] + inp[i] * inp[i]


@cuda.jit
def if_without_else(a, b, x, swap):
    src = a
    if swap > 0:
        src = b
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = src[i] * src[i]
