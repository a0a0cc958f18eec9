"""Native Warp kernels from a public bug report: writes into components of vec3 and matrix arrays.

Source: https://github.com/NVIDIA/warp/issues/1451 ("Support gradients for array-rooted composite
augmented assignments and matrix row writes"), the report's own kernels (code in the issue text;
Warp is Apache-2.0). Reported on Warp main 34f2c0a31: `dst[0][0] += src[0]` and the matrix row
store failed in code generation; `dst[0].x += src[0]` compiled but src.grad stayed 0;
`dst[0][0] = src[0]` (the report's control) worked.
Edits: none to the kernels.
"""
import warp as wp

mat23 = wp.types.matrix(shape=(2, 3), dtype=float)


@wp.kernel(module="repro_component_store")
def component_store(src: wp.array(dtype=float), dst: wp.array(dtype=wp.vec3)):
    # Control case: works on current main.
    dst[0][0] = src[0]


@wp.kernel(module="repro_component_augassign_subscript")
def component_augassign_subscript(src: wp.array(dtype=float), dst: wp.array(dtype=wp.vec3)):
    # Fails during codegen.
    dst[0][0] += src[0]


@wp.kernel(module="repro_component_augassign_attribute")
def component_augassign_attribute(src: wp.array(dtype=float), dst: wp.array(dtype=wp.vec3)):
    # Compiles and updates dst, but src.grad remains zero.
    dst[0].x += src[0]


@wp.kernel(module="repro_matrix_row_store")
def matrix_row_store(src: wp.array(dtype=wp.vec3), dst: wp.array(dtype=mat23)):
    # Fails during codegen.
    dst[0][0] = src[0]
