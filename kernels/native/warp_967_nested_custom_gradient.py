"""Native Warp kernel from a public bug report: a function calling a function with a custom gradient.

Source: https://github.com/NVIDIA/warp/issues/967 ("Gradient compilation error for nested functions
with custom gradient"), the report's own functions and kernel (code in the issue text; Warp is
Apache-2.0). Reported on Warp 1.9: compiling the adjoint of `test_kernel` failed when the kernel
called `nested_length`, which calls `custom_length` (a direct call worked).
Edits: none.
"""
import warp as wp


@wp.func
def custom_length(v: wp.vec3f) -> wp.float32:
    return wp.length(v)


@wp.func_grad(custom_length)
def adj_custom_length(v: wp.vec3f, adj_out: wp.float32):
    wp.adjoint[v] += wp.normalize(v) * adj_out


@wp.func
def nested_length(v: wp.vec3f) -> wp.float32:
    return custom_length(v)


@wp.kernel
def test_kernel(vectors: wp.array(dtype=wp.vec3f), lengths: wp.array(dtype=wp.float32)):
    idx = wp.tid()
    # This leads to a compiler error when computing adjoint
    lengths[idx] = nested_length(vectors[idx])
    # A direct call works as expected however
    #lengths[idx] = custom_length(vectors[idx])
