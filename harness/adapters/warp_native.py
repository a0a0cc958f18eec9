"""A native `@wp.kernel` run as written (harness/adapters/native.py): the case's arrays become Warp
arrays of the kernel's declared dtypes (vectors, matrices, quaternions from trailing dimensions),
reverse mode through `wp.Tape` with each Duplicated array's gradient seeded by its shadow, as the
translated kernels are run (warp_adapter.py)."""
from __future__ import annotations

import numpy as np

from harness.adapters.native_params import NativeParam, host_for, in_launch_order


def declared_params(kernel) -> list[NativeParam]:
    import warp as wp
    out = []
    for arg in kernel.adj.args:
        t = arg.type
        if wp.types.is_array(t):
            dtype = t.dtype
            shape = tuple(getattr(dtype, "_shape_", ()) or ())
            scalar = getattr(dtype, "_wp_scalar_type_", dtype)
            out.append(NativeParam(arg.label, True, np.dtype(wp.dtype_to_numpy(scalar)),
                                   shape, t.ndim))
        else:
            out.append(NativeParam(arg.label, False, _scalar_dtype(wp, t)))
    return out


def _scalar_dtype(wp, t) -> np.dtype | None:
    try:
        return np.dtype(wp.dtype_to_numpy(t))
    except TypeError:           # a struct or another non-scalar parameter
        return None


def run(wp, device: str, kernel, args, launch, mode: str) -> dict:
    """Launch `kernel` in `mode` on the unpacked arguments (adapter.Arg), updating their host
    values and shadows in place; Warp has no adjoints of scalar arguments (refused before)."""
    declared = in_launch_order(declared_params(kernel), args)
    name = kernel.key
    grad = mode == "reverse"
    inputs, arrays = [], []
    for p, a in zip(declared, args):
        wt = kernel.adj.args[declared.index(p)].type
        if a.kind == "array":
            arr = wp.array(host_for(p, a.host, name), dtype=wt.dtype, device=device,
                           requires_grad=grad and a.differentiable)
            arrays.append((p, a, arr))
            inputs.append(arr)
        else:
            floating = p.scalar_dtype is not None and np.issubdtype(p.scalar_dtype, np.floating)
            inputs.append(float(a.host) if floating else int(a.host))
    dim = launch.threads if len(launch.threads) > 1 else launch.threads[0]
    if not grad:
        wp.launch(kernel, dim=dim, inputs=inputs, device=device)
    else:
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, dim=dim, inputs=inputs, device=device)
        for p, a, arr in arrays:
            if a.differentiable:
                arr.grad.assign(wp.array(host_for(p, a.shadows[0], name), dtype=arr.dtype, device=device))
        tape.backward()
    wp.synchronize_device(device)
    for p, a, arr in arrays:
        a.host[...] = arr.numpy().reshape(a.host.shape)
        if grad and a.differentiable:
            a.shadows[0][...] = arr.grad.numpy().reshape(a.host.shape)
    return {}
