"""Taichi 1.7.4 reverse mode: max (or min) after an inner loop, in a loop inside the parallel loop,
gives its adjoint to the wrong operand (plain Taichi, no harness).

Found by the Warp/Taichi CPU differential campaign (`harness fuzz --engine bundled,warp,taichi`,
seeds 284, 1376 and 447; case fuzz-taichi-max-after-inner-loop): Taichi's reverse disagreed with
finite differences where the bundled engine and Warp agreed with them. Reduced by hand to: in a
grid-stride loop (a loop inside Taichi's parallel loop), an inner loop (an empty one will do), then
out[i] = max(x[i], y[i]). Taichi sends d out[i] to the operand that won in the last trip of the
outer loop, not in this one. Without the inner loop, with the max before the inner loop, or without
the outer loop it is right. The same mechanism as the stale tanh/exp of
reproducers/taichi_tanh_after_inner_loop.py (a forward value kept in one slot that every trip of the
outer loop overwrites), which the Taichi fork quadrants fixed for tanh and exp only
(Genesis-Embodied-AI/quadrants pull request 502); no report in taichi-dev/taichi found.

Run: python reproducers/taichi_max_after_inner_loop.py  (exit 1: a derivative is wrong)
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
x = ti.field(ti.f64, shape=N, needs_grad=True)
y = ti.field(ti.f64, shape=N, needs_grad=True)
out = ti.field(ti.f64, shape=N, needs_grad=True)
L = ti.field(ti.f64, shape=(), needs_grad=True)


@ti.kernel
def grid_stride_inner_loop_max():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            for k in range(4):
                pass
            out[i] = ti.max(x[i], y[i])


@ti.kernel
def grid_stride_inner_loop_min():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            for k in range(4):
                pass
            out[i] = ti.min(x[i], y[i])


@ti.kernel
def grid_stride_max():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            out[i] = ti.max(x[i], y[i])


@ti.kernel
def grid_stride_max_before_inner_loop():
    for t in range(T):
        for s in range((N - t + T - 1) // T):
            i = t + s * T
            m = ti.max(x[i], y[i])
            for k in range(4):
                pass
            out[i] = m


@ti.kernel
def inner_loop_max():
    for i in range(N):
        for k in range(4):
            pass
        out[i] = ti.max(x[i], y[i])


@ti.kernel
def loss():
    for i in range(N):
        L[None] += out[i]


rng = np.random.default_rng(0)
xn, yn = rng.normal(size=N), rng.normal(size=N)
x.from_numpy(xn)
y.from_numpy(yn)
with ti.ad.Tape(loss=L):
    globals()[form]()
    loss()
x_wins = xn <= yn if form.endswith("_min") else xn >= yn
right = np.where(x_wins, 1.0, 0.0)              # d sum(out) / dx: 1 where x is the operand taken
got = x.grad.to_numpy()
worst = int(np.argmax(np.abs(got - right)))
err = abs(got[worst] - right[worst])
print(f"{form:34} d sum(out)/dx[{worst}] = {got[worst]:g}, right {right[worst]:g} "
      f"(x = {xn[worst]:.3f}, y = {yn[worst]:.3f}): " + ("WRONG DERIVATIVE" if err > 1e-9 else "agree"))
sys.exit(1 if err > 1e-9 else 0)
'''

FORMS = ("grid_stride_inner_loop_max", "grid_stride_inner_loop_min", "grid_stride_max",
         "grid_stride_max_before_inner_loop", "inner_loop_max")


def main() -> int:
    child = pathlib.Path(tempfile.mkdtemp()) / "taichi_max_after_inner_loop.py"     # Taichi reads kernels from a file
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
