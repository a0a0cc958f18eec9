"""Plain Taichi, no harness: the nested-loops kernel's reverse mode, with and without the bounds
`if` around its loops, at several AD stack sizes. Each configuration runs in a process of its own
(a CUDA illegal address kills the context), and one line per configuration says what came out.

On the H200 the Taichi reverse runs of nested-loops (both variants), warp-1694-dynamic-loop and
refusal-in-helper-file's tape-overflow raised CUDA_ERROR_ILLEGAL_ADDRESS; on the CPU the same
kernels give silently wrong gradients, and only when the loops sit inside an `if` in the parallel
loop (the case's xfail). This script tells whether the fault is that Taichi bug or the adapter's
`ad_stack_size` (1024, harness/adapters/taichi_adapter.py).

    python -m harness.adapters.taichi_repro [cpu|cuda]
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
import sys, numpy as np, taichi as ti
arch, stack, guard = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "if"
ti.init(arch=ti.cuda if arch == "cuda" else ti.cpu, log_level=ti.ERROR,
        **({} if stack < 0 else {"ad_stack_size": stack}))
N, n = 16, 4
y = ti.field(ti.f64, shape=N, needs_grad=True)
A = ti.field(ti.f64, shape=(N, n), needs_grad=True)
x = ti.field(ti.f64, shape=n, needs_grad=True)
L = ti.field(ti.f64, shape=(), needs_grad=True)

@ti.kernel
def guarded(nn: ti.i32, m: ti.i32):
    for t in range(N):
        if t < y.shape[0]:
            acc = ti.f64(0.0)
            for j in range(nn):
                inner = ti.f64(0.0)
                for k in range(m):
                    inner = inner + x[k]
                acc = acc + A[t, j] * x[j] * inner / ti.cast(m, ti.f64)
            y[t] = acc

@ti.kernel
def plain(nn: ti.i32, m: ti.i32):
    for t in range(N):
        acc = ti.f64(0.0)
        for j in range(nn):
            inner = ti.f64(0.0)
            for k in range(m):
                inner = inner + x[k]
            acc = acc + A[t, j] * x[j] * inner / ti.cast(m, ti.f64)
        y[t] = acc

@ti.kernel
def loss():
    for t in range(N):
        L[None] += y[t]

rng = np.random.default_rng(0)
An, xn = rng.normal(size=(N, n)), rng.normal(size=n)
A.from_numpy(An)
x.from_numpy(xn)
with ti.ad.Tape(loss=L):
    (guarded if guard else plain)(n, n)
    loss()
ti.sync()
c = An.sum(axis=0)
want = (c * xn.sum() + (c * xn).sum()) / n          # dL/dx for L = sum_t y_t
print(f"max |dL/dx - exact| = {np.abs(x.grad.to_numpy() - want).max():.3g}", flush=True)
'''


def main(argv: list[str]) -> int:
    arch = argv[0] if argv else "cuda"
    child = Path(tempfile.mkdtemp()) / "taichi_nested_loops.py"      # Taichi reads kernels from a file
    child.write_text(CHILD)
    for guard in ("if", "plain"):
        for stack in (-1, 64, 1024):
            done = subprocess.run([sys.executable, str(child), arch, str(stack), guard], capture_output=True,
                                  text=True, timeout=600)
            said = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip() and "[Taichi]" not in ln]
            fault = next((ln for ln in said if "ILLEGAL_ADDRESS" in ln or "illegal" in ln), None)
            result = next((ln for ln in said if ln.startswith("max |")), None)
            what = result or fault or (said[-1] if said else f"exit status {done.returncode}")
            label = "default" if stack < 0 else str(stack)
            print(f"{arch:5} loops {'inside the if' if guard == 'if' else 'without the if'}, ad_stack_size "
                  f"{label:>7}: {what.strip()[:160]} (exit {done.returncode})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
