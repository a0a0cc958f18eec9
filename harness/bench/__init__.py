"""`harness bench`: generated derivative kernels against hand-written kernels with the same
semantics, the copy bandwidth and JAX, measured in one run on one GPU (docs/gpu.md)."""
