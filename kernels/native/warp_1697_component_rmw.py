"""Native Warp kernels after a public bug report: read-modify-write chains on components of a local
matrix or vector.

Source: https://github.com/NVIDIA/warp/issues/1697 ("Adjoint of `v[i] = v[i] + x` on local
vectors/matrices appears silently wrong under the default `enable_vector_component_overwrites=False`"),
reported on Warp 1.15.0 and 1.16.0.dev, CPU and CUDA. The report's own script is not stored here
(its text is truncated where the harness keeps it), so these kernels are written for the harness from
the report's description: a chain of `m[0, 0] = m[0, 0] + x` writes on a LOCAL matrix or vector has a
bit-correct forward, but write k of an n-write chain gets adjoint weight 2^(n - k) (the overwritten
component's adjoint is not cleared before the read of the same component re-counts it); the
augmented spelling `m[0, 0] += x` lowers differently and is exact.
Edits: not applicable (no code of the report's is used).
"""
import warp as wp


@wp.kernel
def matrix_component_chain(x: wp.array(dtype=float), out: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    m = wp.mat22()
    m[0, 0] = m[0, 0] + x[i]
    m[0, 0] = m[0, 0] + 2.0 * x[i]
    m[0, 0] = m[0, 0] + 3.0 * x[i]
    m[1, 1] = m[1, 1] + x[i] * x[i]
    out[i] = m


@wp.kernel
def vector_component_chain(x: wp.array(dtype=float), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v = wp.vec3()
    v[1] = v[1] + x[i]
    v[1] = v[1] + 2.0 * x[i]
    v[1] = v[1] + 3.0 * x[i]
    v[2] = v[2] + x[i] * x[i]
    out[i] = v


@wp.kernel
def matrix_component_augmented(x: wp.array(dtype=float), out: wp.array(dtype=wp.mat22)):
    # the report's control: the same chain written with `+=`
    i = wp.tid()
    m = wp.mat22()
    m[0, 0] += x[i]
    m[0, 0] += 2.0 * x[i]
    m[0, 0] += 3.0 * x[i]
    m[1, 1] += x[i] * x[i]
    out[i] = m
