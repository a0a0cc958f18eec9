"""Taichi 1.7.4 reverse mode: exp (and tanh) summed over an inner loop of the parallel loop gets the
last trip's derivative at every trip (plain Taichi, no harness).

    for i in range(n):                  # Taichi's parallel loop
        s = 0.0
        for k in range(a.shape[1]):     # a dynamic inner loop
            s = s + ti.exp(a[i, k])
        out[i] = s

d out[i] / d a[i, k] is exp(a[i, k]); Taichi's reverse gives exp(a[i, m-1]) for every k. Its adjoint
of exp (and of tanh) reads the forward result, which the inner loop keeps in one slot that every
trip overwrites; sin, sqrt, log and powers recompute from the operand and are right (try
--function). The log-sum-exp and softmax kernels people write have this shape (the public
replay_trajectory_classification kernels in cases/ do). The cause as the Taichi fork quadrants
found and fixed it: https://github.com/Genesis-Embodied-AI/quadrants/pull/502; no report in
taichi-dev/taichi found. Case: cases/taichi-exp-in-inner-loop.yaml.

Run: python reproducers/taichi_exp_in_inner_loop.py [--function exp|tanh|sin] [--arch cuda]
  exit 1 when the derivative is wrong (exp and tanh on 1.7.4), 0 when it is right.
"""
import argparse
import sys

import numpy as np
import taichi as ti

parser = argparse.ArgumentParser()
parser.add_argument("--function", default="exp", choices=("exp", "tanh", "sin"))
parser.add_argument("--arch", default="cpu", choices=("cpu", "cuda"))
options = parser.parse_args()

ti.init(arch=ti.cuda if options.arch == "cuda" else ti.cpu, default_fp=ti.f64, log_level=ti.ERROR)
n, m = 2, 3
a = ti.field(ti.f64, shape=(n, m), needs_grad=True)
out = ti.field(ti.f64, shape=n, needs_grad=True)


@ti.func
def f(x):
    y = 0.0
    if ti.static(options.function == "exp"):
        y = ti.exp(x)
    elif ti.static(options.function == "tanh"):
        y = ti.tanh(x)
    else:
        y = ti.sin(x)
    return y


@ti.kernel
def row_sums():
    for i in range(n):
        s = 0.0
        for k in range(a.shape[1]):
            s = s + f(a[i, k])
        out[i] = s


values = np.random.default_rng(0).uniform(-1.0, 1.0, (n, m))
derivative = {"exp": np.exp, "tanh": lambda x: 1.0 / np.cosh(x) ** 2, "sin": np.cos}[options.function]
a.from_numpy(values)
out.grad.fill(1.0)
row_sums()
row_sums.grad()
got, right = a.grad.to_numpy(), derivative(values)
version = ti.__version__ if isinstance(ti.__version__, str) else ".".join(map(str, ti.__version__))
print(f"Taichi {version}: d/da of the row sums of {options.function}(a)")
print("reverse mode:", np.array2string(got, precision=4))
print("right       :", np.array2string(right, precision=4))
wrong = not np.allclose(got, right, rtol=1e-12, atol=1e-12)
print("WRONG DERIVATIVE" if wrong else "agree")
sys.exit(1 if wrong else 0)
