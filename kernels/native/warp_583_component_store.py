"""Native Warp kernel from a public bug report: storing one component of a vec3 array element.

Source: https://github.com/NVIDIA/warp/issues/583 ("Gradients for composite type in-place array
assignments"), the report's own kernel `vectest` (code in the issue text; Warp is Apache-2.0).
Reported: `x[i].y = y[i]` updated x but y.grad stayed 0 (expected 1).
Edits: none to the kernel; the report's wp.Tape launch is the harness's reverse run.
"""
import warp as wp


@wp.kernel
def vectest(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=float)):
    i = wp.tid()

    x[i].y = y[i]
