"""Warp: a running maximum and minimum kept in a dynamic loop get no adjoint (plain Warp, no harness).

The xarray-spatial focal range and focal max kernels (cases public-xrspatial-focal-range and
-focal-max) keep `mx = v if v > mx` over a window whose extent is an array's shape: a dynamic loop.
Warp's reverse of it gives the data a zero adjoint; with a constant trip count, which Warp unrolls,
the same body differentiates correctly. Warp's documentation says a variable overwritten in a
dynamic loop is not differentiable (https://nvidia.github.io/warp/modules/differentiability.html#dynamic-loops;
replaying dynamic loops in reverse is the open request NVIDIA/warp#729, and #1552 is the argmax
form with `continue`). Warp neither refuses the kernel nor warns.

Run: python reproducers/warp_running_extrema_dynamic_loop.py  (exit 1: the derivative is wrong)
"""
import importlib.util
import pathlib
import sys
import tempfile

import numpy as np

SOURCE = '''
import warp as wp


@wp.kernel
def range_dynamic(data: wp.array(dtype=wp.float64), taps: wp.int32, out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    mx = wp.float64(-1.0e30)
    mn = wp.float64(1.0e30)
    for k in range(taps):                    # a trip count from an argument: a dynamic loop
        v = data[i + k]
        if v > mx:
            mx = v
        if v < mn:
            mn = v
    out[i] = mx - mn


@wp.kernel
def range_static(data: wp.array(dtype=wp.float64), taps: wp.int32, out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    mx = wp.float64(-1.0e30)
    mn = wp.float64(1.0e30)
    for k in range(3):                       # the same with a constant trip count (unrolled)
        v = data[i + k]
        if v > mx:
            mx = v
        if v < mn:
            mn = v
    out[i] = mx - mn
'''


def kernels():
    path = pathlib.Path(tempfile.mkdtemp()) / "warp_running_extrema.py"    # Warp reads kernels from a file
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    import warp as wp
    wp.config.quiet = True
    wp.init()
    module = kernels()
    x = np.array([0.3, -1.2, 2.0, 0.7, -0.4, 1.1])
    n = len(x) - 2
    exact = np.zeros_like(x)                 # d sum(out) / d data: +1 at each window's max, -1 at its min
    for i in range(n):
        exact[i + np.argmax(x[i:i + 3])] += 1.0
        exact[i + np.argmin(x[i:i + 3])] -= 1.0
    wrong = False
    for kernel in (module.range_dynamic, module.range_static):
        data = wp.array(x, dtype=wp.float64, requires_grad=True)
        out = wp.zeros(n, dtype=wp.float64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, dim=n, inputs=[data, 3, out])
        tape.backward(grads={out: wp.array(np.ones(n), dtype=wp.float64)})
        got = data.grad.numpy()
        ok = np.allclose(got, exact)
        wrong |= not ok
        print(f"Warp {wp.config.version} {kernel.key:13}: d sum(out)/d data = {got}, exact {exact}: "
              + ("agree" if ok else "WRONG DERIVATIVE"))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
