"""Native Warp kernel from a public bug report: a kernel that reads b[0], then updates it.

Source: https://github.com/NVIDIA/warp/issues/947 ("Same limitations as Taichi for
differentiability?"), the report's own kernel `func_broke_rule_1` (code in the issue text; Warp is
Apache-2.0). Reported: x.grad[1] = 110 where d(x[1] * b[0])/dx[1] = b's value when read, 10; the
adjoint reads b[0] after the kernel added 100 to it. A Warp maintainer called it a general
limitation of its autodiff (global data access rules, as in Taichi).
Edits: none. The case's numba.cuda port of the same kernel is warp_947_numba_port.py.
"""
import warp as wp


@wp.kernel
def func_broke_rule_1(x: wp.array(dtype=wp.float32),
                      b: wp.array(dtype=wp.float32),
                      loss: wp.array(dtype=wp.float32)):
    # BAD
    loss[0] = x[1] * b[0]
    b[0] += 100.0
