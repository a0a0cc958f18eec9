"""Library references for a benchmark's derivative, timed on the same buffers as the generated
kernel: what a user would call instead of writing the adjoint (cuBLAS through cupy).

Each function takes the bench's values (name -> (value, shadow)) and returns a callable that
enqueues the reference's work; its semantics match the generated kernel's (shadows accumulate).
"""
from __future__ import annotations


def matmul_reverse_pair(values: dict):
    """C = A B reversed by two cuBLAS products: dA += dC B^T, dB += A^T dC (then C = A B, the
    primal the reverse kernel writes too, and dC consumed)."""
    import cupy as cp
    (a, da), (b, db), (c, dc) = values["A"], values["B"], values["C"]

    def go():
        da[...] += dc @ b.T               # in place: the shadows are the bench's buffers
        db[...] += a.T @ dc
        cp.matmul(a, b, out=c)
        dc.fill(0)
    return go
