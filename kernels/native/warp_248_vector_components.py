"""Native Warp kernel from a public bug report: assigning a vec3 array element's components.

Source: https://github.com/NVIDIA/warp/issues/248 ("Gradients with vectors are incorrect"), the
report's own kernel (code in the issue text; Warp is Apache-2.0).
Reported: `y[tid].x = x[tid] * 2.` (and .y, .z) gave x.grad = 0 in reverse mode.
Edits: none to the kernel body; the report's launch (`adjoint=True` by hand) is the harness's
reverse run through wp.Tape.
"""
import warp as wp


@wp.kernel
def test(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    y[tid].x = x[tid] * 2.
    y[tid].y = x[tid] * 3.
    y[tid].z = x[tid] * 4.
