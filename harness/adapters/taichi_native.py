"""A native `@ti.kernel` run as written (harness/adapters/native.py). Its parameters declare how
the case's arrays arrive:
- `ti.types.ndarray(dtype=..., ndim=n)`: an ndarray of the declared element (`ti.math.vec3`,
  `ti.math.mat3`, a scalar type), the element's shape being the case array's trailing dimensions;
- `ti.template()`: a scalar field of the case array's shape and dtype;
- a scalar type: the case's scalar.
Reverse mode is Taichi's own `kernel.grad`: after the primal launch, every Duplicated array's
gradient holds its shadow (the final state's cotangent) and the kernel's adjoint runs, as
`ti.ad.Tape` runs it for one kernel. Forward mode is refused: `ti.ad.FwdMode` adds a stored
value's tangent into the element's incoming tangent, and only the translated kernels carry the
store-mask twin that takes it out again (taichi_adapter.py)."""
from __future__ import annotations

import numpy as np

from harness.core.errors import UnsupportedError
from harness.adapters.native_params import NativeParam, host_for, in_launch_order


def _numpy_dtype(ti_type) -> np.dtype | None:
    from taichi.lang.util import to_numpy_type
    try:
        return np.dtype(to_numpy_type(ti_type))
    except Exception:            # noqa: BLE001 - taichi raises its own error for a non-primitive type
        return None


def _taichi_dtype(ti, dtype: np.dtype):
    return {np.dtype(np.float32): ti.f32, np.dtype(np.float64): ti.f64}.get(np.dtype(dtype)) or \
        getattr(ti, f"{np.dtype(dtype).kind}{np.dtype(dtype).itemsize * 8}")


def declared_params(kernel) -> list[NativeParam]:
    from taichi.types.ndarray_type import NdarrayType
    out = []
    for arg in kernel._primal.arguments:
        ann = arg.annotation
        if isinstance(ann, NdarrayType):
            elem = ann.dtype
            if hasattr(elem, "m") and getattr(elem, "ndim", 1) == 2:          # a matrix type
                shape, scalar = (elem.n, elem.m), elem.dtype
            elif hasattr(elem, "n"):                                          # a vector type
                shape, scalar = (elem.n,), elem.dtype
            else:                                                             # a scalar type, or none
                shape, scalar = (), elem
            out.append(NativeParam(arg.name, True, _numpy_dtype(scalar) if scalar is not None else None,
                                   shape, ann.ndim))
        elif type(ann).__name__ == "Template":
            out.append(NativeParam(arg.name, True, None, (), 0, template=True))
        else:
            out.append(NativeParam(arg.name, False, _numpy_dtype(ann)))
    return out


def run(adapter, kernel, args, launch, mode: str) -> dict:
    """Launch `kernel` in `mode` on the unpacked arguments (adapter.Arg), updating their host
    values and shadows in place. `adapter`: the Taichi adapter (its fields are reused per shape)."""
    ti = adapter.ti
    if mode == "forward":
        raise UnsupportedError(
            f"forward mode of a native Taichi kernel ({kernel.__name__}): ti.ad.FwdMode adds a stored value's "
            "tangent into the element's incoming tangent, and the harness can take it out only for the kernels "
            "it translates (their store-mask twin); run the native kernel in reverse mode")
    declared = in_launch_order(declared_params(kernel), args)
    grad = mode == "reverse"
    inputs, arrays = [], []
    for p, a in zip(declared, args):
        if a.kind != "array":
            floating = p.scalar_dtype is not None and np.issubdtype(p.scalar_dtype, np.floating)
            inputs.append(float(a.host) if floating else int(a.host))
            continue
        host = host_for(p, a.host, kernel.__name__)
        floating = np.issubdtype(host.dtype, np.floating)
        if p.template:
            arr = adapter._field("primal", a)
        else:
            ann = kernel._primal.arguments[declared.index(p)].annotation
            ndim = host.ndim - len(p.element_shape) if p.ndim is None else p.ndim   # `ndarray()`: the case's
            dtype = ann.dtype if ann.dtype is not None else _taichi_dtype(ti, host.dtype)
            arr = ti.ndarray(dtype, shape=host.shape[:ndim], needs_grad=grad and floating)
        arr.from_numpy(host)
        if grad and floating:
            arr.grad.from_numpy(host_for(p, a.shadows[0], kernel.__name__) if a.differentiable
                                else np.zeros_like(host))
        arrays.append((p, a, arr))
        inputs.append(arr)
    try:
        kernel(*inputs)
        if grad:
            kernel.grad(*inputs)
    except RuntimeError as exc:
        if "auto_diff" in str(exc) or "Not supported" in str(exc):
            raise UnsupportedError(f"Taichi's autodiff refuses the kernel ({mode}): {exc}") from exc
        raise
    ti.sync()
    for p, a, arr in arrays:
        a.host[...] = arr.to_numpy().reshape(a.host.shape)
        if grad and a.differentiable:
            a.shadows[0][...] = arr.grad.to_numpy().reshape(a.host.shape)
    return {}
