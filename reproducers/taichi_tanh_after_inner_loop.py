"""Taichi 1.7.4 reverse mode: tanh after an inner loop, in a loop inside the parallel loop, gets a
wrong adjoint (plain Taichi, no harness).

The kernel of the fuzz finding fuzz-taichi-grid-stride-loops (seed 134 of the bounded differential
fuzz) is a grid-stride loop (`for i in range(cuda.grid(1), n, cuda.gridsize(1))`, a loop inside
Taichi's parallel loop) holding a loop of four trips and then out[i] = asin(0.9 tanh(...)) + ...
Reduced through plain Taichi runs (each candidate kept while the reverse still disagreed with
finite differences), the inner loop's body went and the error stayed; by hand, to this: in the
grid-stride loop, an empty `for k in range(4): pass`, then out[i] = tanh(y[i]). Taichi's reverse
gives a wrong d out / dy. Without the empty loop, without the grid-stride loop, or with sin in
place of tanh it is right; with exp in place of tanh it is wrong too (seeds 1588 and 181 of the
Warp/Taichi CPU campaign, variant `exp` of the case). The cause, as a fork of Taichi found and fixed it
(Genesis-Embodied-AI/quadrants pull request 502, "Recompute tanh/exp on the operand in the reverse
pass"): Taichi's adjoint of tanh (and exp) reads the forward result, which in a dynamic loop is
kept in one slot that every iteration overwrites, so the reversed loop reads a stale value. No
report in taichi-dev/taichi found.

Run: python reproducers/taichi_tanh_after_inner_loop.py  (exit 1: a derivative is wrong)
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
N, T = 46, 16                       # 46 elements, 16 threads: a grid-stride loop of up to 3 trips
y = ti.field(ti.f64, shape=N, needs_grad=True)
out = ti.field(ti.f64, shape=N, needs_grad=True)
L = ti.field(ti.f64, shape=(), needs_grad=True)


@ti.kernel
def grid_stride_inner_loop_tanh():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            for k in range(4):
                pass
            out[i] = ti.tanh(y[i])


@ti.kernel
def grid_stride_tanh():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            out[i] = ti.tanh(y[i])


@ti.kernel
def inner_loop_tanh():
    for i in range(N):
        for k in range(4):
            pass
        out[i] = ti.tanh(y[i])


@ti.kernel
def grid_stride_inner_loop_sin():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            for k in range(4):
                pass
            out[i] = ti.sin(y[i])


@ti.kernel
def grid_stride_inner_loop_exp():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            for k in range(4):
                pass
            out[i] = ti.exp(y[i])


@ti.kernel
def loss():
    for i in range(N):
        L[None] += out[i]


yn = np.random.default_rng(0).normal(size=N)
y.from_numpy(yn)
with ti.ad.Tape(loss=L):
    globals()[form]()
    loss()
exact = np.cos(yn) if form.endswith("_sin") else np.exp(yn) if form.endswith("_exp") else 1.0 - np.tanh(yn) ** 2
err = np.abs(y.grad.to_numpy() - exact).max()
print(f"{form:28} max |d sum(out)/dy - exact| = {err:.3g}: " + ("WRONG DERIVATIVE" if err > 1e-9 else "agree"))
sys.exit(1 if err > 1e-9 else 0)
'''


def main() -> int:
    child = pathlib.Path(tempfile.mkdtemp()) / "taichi_tanh_after_inner_loop.py"     # Taichi reads kernels from a file
    child.write_text(CHILD)
    wrong = False
    for form in ("grid_stride_inner_loop_tanh", "grid_stride_tanh", "inner_loop_tanh", "grid_stride_inner_loop_sin",
                 "grid_stride_inner_loop_exp"):
        done = subprocess.run([sys.executable, str(child), form], capture_output=True, text=True, timeout=600)
        said = [ln for ln in done.stdout.splitlines() if ln.startswith(form)]
        print(said[-1] if said else f"{form}: exit status {done.returncode}", flush=True)
        wrong |= done.returncode != 0
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
