"""Taichi 1.7.4 reverse mode: a local assigned inside an `if`, then read in a later loop, or a loop
inside an `if`, loses part of the adjoint (plain Taichi, no harness).

Each kernel computes out[i] = x[i]^3 as p = v; p = p * v twice, in a loop over range(2) (a loop
Taichi keeps, with its loop-carried p on the AD stack), so d sum(out) / dx = 3 x^2:
- `if_then_loop`: v = x[i] assigned inside an `if` before the loop. Reverse gives 2 x^2: the
  adjoint reaching v through the loop's reads of it is lost. How the lane-sums `global-weights`
  kernel reads, translated (`v = x[r, c] if r < m and c < n else 0.0` is a branch, since Taichi's
  ti.select would evaluate the read out of bounds). No upstream report found (new).
- `loop_inside_if`: the loop sits inside the `if` (the bounds guard around a kernel's body, as in
  lane-sums `guarded`). Reverse is wrong too: the Taichi bug of the corpus's warp-1694-dynamic-loop
  case ("a loop inside an if inside the parallel loop", harness/adapters/taichi_repro.py).
- `no_if`, `if_without_loop`: the same without the `if`, or without the loop: correct.

Run: python reproducers/taichi_if_local_then_loop.py  (exit 1: a derivative is wrong)
"""
import pathlib
import subprocess
import sys
import tempfile

CHILD = r'''
import sys
import numpy as np
import taichi as ti

ti.init(arch=ti.cpu, log_level=ti.ERROR)
N = 4
x = ti.field(ti.f64, shape=N, needs_grad=True)
out = ti.field(ti.f64, shape=N, needs_grad=True)
L = ti.field(ti.f64, shape=(), needs_grad=True)


@ti.kernel
def if_then_loop():
    for i in range(N):
        v = ti.f64(0.0)
        if i < N:
            v = x[i]
        p = v
        for k in range(2):
            p = p * v
        out[i] = p


@ti.kernel
def loop_inside_if():
    for i in range(N):
        if i < N:
            v = x[i]
            p = v
            for k in range(2):
                p = p * v
            out[i] = p


@ti.kernel
def no_if():
    for i in range(N):
        v = x[i]
        p = v
        for k in range(2):
            p = p * v
        out[i] = p


@ti.kernel
def if_without_loop():
    for i in range(N):
        v = ti.f64(0.0)
        if i < N:
            v = x[i]
        out[i] = v * v * v


@ti.kernel
def loss():
    for i in range(N):
        L[None] += out[i]


xn = np.array([0.5, -1.0, 1.5, 2.0])
x.from_numpy(xn)
with ti.ad.Tape(loss=L):
    globals()[sys.argv[1]]()
    loss()
got, exact = x.grad.to_numpy(), 3 * xn ** 2
ok = np.allclose(got, exact)
print(f"{sys.argv[1]:16} d sum(out)/dx = {got}, exact 3 x^2 = {exact}: " + ("agree" if ok else "WRONG DERIVATIVE"))
sys.exit(0 if ok else 1)
'''


def main() -> int:
    child = pathlib.Path(tempfile.mkdtemp()) / "taichi_if_local_then_loop.py"     # Taichi reads kernels from a file
    child.write_text(CHILD)
    wrong = False
    for form in ("if_then_loop", "loop_inside_if", "no_if", "if_without_loop"):
        done = subprocess.run([sys.executable, str(child), form], capture_output=True, text=True, timeout=600)
        lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.startswith(form)]
        print(lines[-1] if lines else f"{form}: exit status {done.returncode}", flush=True)
        wrong |= done.returncode != 0
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
