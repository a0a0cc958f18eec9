"""Taichi 1.7.4 reverse mode: in a loop inside the parallel loop, a local set in an if, carried into
an inner loop and squared in a later if, gets a wrong adjoint (plain Taichi, no harness).

Found by the Warp/Taichi CPU differential campaign (`harness fuzz --engine bundled,warp,taichi`,
seed 1462; case fuzz-taichi-branch-local-through-loop): Taichi's reverse disagreed with finite
differences where the bundled engine and Warp agreed with them. Reduced by hand, one statement at a
time, in plain Taichi runs like these: in a grid-stride loop, `v = y[i]; if i % 2 == 0: v = x[i]`,
an inner loop carrying `acc` started from v, then `if x[i] > -5: w = v * v`. The forms below take
one ingredient away each, and Taichi is right in every one of them. The derivative is checked
against central finite differences of the same Taichi kernel along a random direction. A sibling
of reproducers/taichi_if_local_then_loop.py (a local set in an if and read inside a later loop),
which is wrong in the parallel loop itself, where this one is right (`parallel_loop_only`). No
report in taichi-dev/taichi found.

Run: python reproducers/taichi_branch_local_through_loop.py  (exit 1: a derivative is wrong)
"""
import pathlib
import subprocess
import sys
import tempfile

CHILD = r'''
import sys
import numpy as np
import taichi as ti

ti.init(arch=ti.cpu, log_level=ti.ERROR, default_fp=ti.f64)
form = sys.argv[1]
N, T = 37, 32                       # 37 elements, 32 threads: a grid-stride loop of one or two trips
x = ti.field(ti.f64, shape=N, needs_grad=True)
y = ti.field(ti.f64, shape=N, needs_grad=True)
out = ti.field(ti.f64, shape=N, needs_grad=True)
wt = ti.field(ti.f64, shape=N)
L = ti.field(ti.f64, shape=(), needs_grad=True)


@ti.kernel
def grid_stride_branch_local_loop_square():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            v = y[i]
            if i % 2 == 0:
                v = x[i]
            acc = v
            for k in range(4):
                acc = acc * 0.69 + 1.0
            w = x[i]
            if x[i] > -5.0:
                w = v * v
            out[i] = acc + w


@ti.kernel
def without_first_if():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            v = y[i]
            acc = v
            for k in range(4):
                acc = acc * 0.69 + 1.0
            w = x[i]
            if x[i] > -5.0:
                w = v * v
            out[i] = acc + w


@ti.kernel
def linear_in_later_if():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            v = y[i]
            if i % 2 == 0:
                v = x[i]
            acc = v
            for k in range(4):
                acc = acc * 0.69 + 1.0
            w = x[i]
            if x[i] > -5.0:
                w = v * 3.0
            out[i] = acc + w


@ti.kernel
def carried_from_constant():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            v = y[i]
            if i % 2 == 0:
                v = x[i]
            acc = 0.0
            for k in range(4):
                acc = acc * 0.69 + 1.0
            w = x[i]
            if x[i] > -5.0:
                w = v * v
            out[i] = acc + w


@ti.kernel
def parallel_loop_only():
    for i in range(N):
        v = y[i]
        if i % 2 == 0:
            v = x[i]
        acc = v
        for k in range(4):
            acc = acc * 0.69 + 1.0
        w = x[i]
        if x[i] > -5.0:
            w = v * v
        out[i] = acc + w


@ti.kernel
def loss():
    for i in range(N):
        L[None] += wt[i] * out[i]


rng = np.random.default_rng(1)
xn, yn, wn = rng.normal(size=N), rng.normal(size=N), rng.normal(size=N)
vx, vy = rng.normal(size=N), rng.normal(size=N)
wt.from_numpy(wn)
kernel = globals()[form]


def primal(xv, yv):
    x.from_numpy(xv)
    y.from_numpy(yv)
    kernel()
    return float(np.sum(wn * out.to_numpy()))


h = 1e-6
fd = (primal(xn + h * vx, yn + h * vy) - primal(xn - h * vx, yn - h * vy)) / (2 * h)
x.from_numpy(xn)
y.from_numpy(yn)
with ti.ad.Tape(loss=L):
    kernel()
    loss()
ad = float(np.dot(x.grad.to_numpy(), vx) + np.dot(y.grad.to_numpy(), vy))
wrong = abs(ad - fd) > 1e-6 * max(1.0, abs(fd))
print(f"{form:38} reverse <J^T w, v> = {ad:.8g}, finite differences {fd:.8g}: "
      + ("WRONG DERIVATIVE" if wrong else "agree"))
sys.exit(1 if wrong else 0)
'''

FORMS = ("grid_stride_branch_local_loop_square", "without_first_if", "linear_in_later_if",
         "carried_from_constant", "parallel_loop_only")


def main() -> int:
    child = pathlib.Path(tempfile.mkdtemp()) / "taichi_branch_local_through_loop.py"   # Taichi reads kernels from a file
    child.write_text(CHILD)
    wrong = False
    for form in FORMS:
        done = subprocess.run([sys.executable, str(child), form], capture_output=True, text=True, timeout=600)
        said = [ln for ln in done.stdout.splitlines() if ln.startswith(form)]
        print(said[-1] if said else f"{form}: exit status {done.returncode}", flush=True)
        wrong |= done.returncode != 0
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
