"""Taichi 1.7.4 reverse mode dies with SIGBUS on the CPU (plain Taichi, no harness).

The kernel of the fuzz finding fuzz-taichi-sigbus (seed 100 of the bounded differential fuzz),
reduced through plain Taichi runs (each candidate a process of its own, kept while the process
still died with SIGBUS): inside the bounds check's `else` (the translation of `if i >= n: return`),
a local set in an if/else, and a loop carrying another local (which does nothing). The derivative
asked for is trivial (d out / d y = 1). Without the loop, without the inner if/else, or without
the outer if the reverse runs and is right. ad_stack_size (1024 in the adapter) makes no
difference. No matching upstream report found (closest: taichi-dev/taichi#8027, a segfault from an
inner loop's AD stack, which needs a long loop; this one has 4 trips).

`via_function` is the same inside a `ti.func` whose if/else sets its result (a device function
with two returns translates to one): the fuzz finding fuzz-taichi-sigbus-ticket (seed 118), whose
plain-Taichi run dies the same way and runs without its loop or with the function's call
replaced by its value.

Run: python reproducers/taichi_sigbus_branch_in_guard.py  (exit 1: the process died)
"""
import pathlib
import subprocess
import sys
import tempfile

CHILD = r'''
import sys
import numpy as np
import taichi as ti

ti.init(arch=ti.cpu, log_level=ti.ERROR, offline_cache=False)
form = sys.argv[1]
N = 20
y = ti.field(ti.f64, shape=N, needs_grad=True)
out = ti.field(ti.f64, shape=N, needs_grad=True)
L = ti.field(ti.f64, shape=(), needs_grad=True)


@ti.kernel
def reduced(out: ti.template(), y: ti.template()):
    for i in range(N):
        if i >= out.shape[0]:
            pass
        else:
            t = 0.5
            c = 0.5
            if t > 0.5:
                pass
            else:
                c = t * 0.5
            v = c
            s = 0.9
            for k in range(4):
                s = s
            out[i] = y[i] + 0.67 * v


@ti.func
def pick(t: ti.f64) -> ti.f64:
    c = ti.f64(0.5)
    if t > 0.5:
        c = t
    else:
        c = t * 0.5
    return c


@ti.kernel
def via_function(out: ti.template(), y: ti.template()):
    for i in range(N):
        if i < out.shape[0]:
            v = pick(0.5)
            s = 0.9
            for k in range(4):
                s = s
            out[i] = y[i] + 0.67 * v


@ti.kernel
def no_loop(out: ti.template(), y: ti.template()):
    for i in range(N):
        if i >= out.shape[0]:
            pass
        else:
            t = 0.5
            c = 0.5
            if t > 0.5:
                pass
            else:
                c = t * 0.5
            v = c
            out[i] = y[i] + 0.67 * v


@ti.kernel
def no_inner_if(out: ti.template(), y: ti.template()):
    for i in range(N):
        if i >= out.shape[0]:
            pass
        else:
            t = 0.5
            c = t * 0.5
            v = c
            s = 0.9
            for k in range(4):
                s = s
            out[i] = y[i] + 0.67 * v


@ti.kernel
def no_outer_if(out: ti.template(), y: ti.template()):
    for i in range(N):
        t = 0.5
        c = 0.5
        if t > 0.5:
            pass
        else:
            c = t * 0.5
        v = c
        s = 0.9
        for k in range(4):
            s = s
        out[i] = y[i] + 0.67 * v


@ti.kernel
def loss(out: ti.template()):
    for i in range(N):
        L[None] += out[i]


y.from_numpy(np.linspace(0.0, 1.0, N))
with ti.ad.Tape(loss=L):
    globals()[form](out, y)
    loss(out)
ok = np.allclose(y.grad.to_numpy(), 1.0)
print(f"{form:12} reverse ran: d sum(out)/dy " + ("= 1, right" if ok else f"= {y.grad.to_numpy()[:3]}..., WRONG"))
sys.exit(0 if ok else 1)
'''


def main() -> int:
    child = pathlib.Path(tempfile.mkdtemp()) / "taichi_sigbus_branch_in_guard.py"     # Taichi reads kernels from a file
    child.write_text(CHILD)
    failed = False
    for form in ("reduced", "via_function", "no_loop", "no_inner_if", "no_outer_if"):
        done = subprocess.run([sys.executable, str(child), form], capture_output=True, text=True, timeout=600)
        said = [ln for ln in done.stdout.splitlines() if ln.startswith(form)]
        if done.returncode < 0:
            said = [f"{form:12} the process died with signal {-done.returncode}"
                    + (" (SIGBUS)" if -done.returncode == 7 else "")]
        print(said[-1] if said else f"{form:12} exit status {done.returncode}", flush=True)
        failed |= done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
