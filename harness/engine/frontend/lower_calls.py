"""Lowering of calls: math and casts become primitives, CUDA intrinsics (atomics, shuffles, barriers,
shared and local arrays) become IR statements; device functions and device-side `autodiff` go to
lower_inline.py. `call` is the Call node's entry in the lowering's dispatch table (lower_dispatch.py).
"""
from __future__ import annotations

import ast

from harness.engine.frontend.source import resolve_global
from harness.engine.ir.ssa import Alloc, Assign, Atomic, Barrier, EXTREMA, Param, Prim, Special
from harness.engine.frontend.lower_dispatch import expression, lowers
from harness.engine.frontend.lower_exprs import element
from harness.engine.frontend.lower_inline import autodiff_call, device_call
from harness.engine.frontend.lower_random import is_random_call, random_call
from harness.engine.frontend.lower_resolve import array_dtype, dotted, literal_int, resolve_call
from harness.engine.frontend.lower_state import LoweringState
from harness.engine.frontend.numba_limits import numba_refusal
from harness.engine.rules.table import arity_problem


@lowers(ast.Call)
def call(st: LoweringState, node, out, nvalues: int = 1, as_list: bool = False):
    """Lower a call; returns one atom, or with as_list the list of its result atoms."""
    if node.keywords and not is_random_call(st, node):     # numba.cuda.random's take them (lower_random.py)
        raise st.err(node, "keyword arguments are not supported in kernel calls")
    f = node.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call) \
            and resolve_call(st, f.value) == ("cuda", "cuda.cg.this_grid"):
        raise st.err(node, GRID_SYNC)          # cuda.cg.this_grid().sync()
    resolved = resolve_call(st, node)
    if resolved is None:
        raise st.err(node, numba_refusal(node) or
                     f"call to `{ast.unparse(node.func)}` is not supported by the AD transform yet")
    kind, what = resolved
    if kind == "device":
        results = device_call(st, what, node, out)
        if nvalues == -1:
            return None
        if as_list:
            return results
        if len(results) != 1:
            raise st.err(node, f"{what.__name__} returns {len(results)} values; unpack them")
        return results[0] if nvalues == 1 else results
    if kind == "autodiff":
        targets = autodiff_call(st, node, out)
        if nvalues == -1 or as_list:
            return None if nvalues == -1 else targets
        if len(targets) != 1:
            raise st.err(node, f"this autodiff call returns {len(targets)} values; unpack them")
        return targets[0]
    if kind == "cuda":
        return cuda_call(st, what, node, out)
    if kind == "random":
        return random_call(st, what, node, out)
    if kind != "rule":
        raise st.err(node, f"`{ast.unparse(node.func)}` is not supported here")
    name = what
    problem = arity_problem(name, len(node.args))
    if problem:
        raise st.err(node, f"`{ast.unparse(node.func)}` {problem}")
    args = tuple(expression(st, a, out) for a in node.args)
    if name in ("min", "max") and len(args) > 2:        # min(a, b, c) -> min(min(a, b), c)
        acc = args[0]
        for a in args[1:]:
            acc = st.emit_assign(out, st.temp(), Prim(name, (acc, a)))
        return acc
    if name == "cast_int64" and len(args) == 1 and st.atom_type(args[0]).startswith("float"):
        name = "trunc_int"
    if name == "cbrt" and st.atom_type(args[0]) == "float32":
        name = "cbrtf"                                  # libdevice's float32 cbrt
    return st.emit_assign(out, st.temp(), Prim(name, args))


FENCES = ("cuda.threadfence", "cuda.threadfence_block", "cuda.threadfence_system")
GRID_SYNC = ("a grid-wide barrier (cuda.cg.this_grid().sync()) is not supported: its derivative kernel would "
             "need a cooperative launch, which the engine does not make")


def cuda_call(st: LoweringState, name, node, out):
    if name == "cuda.cg.this_grid":
        raise st.err(node, GRID_SYNC)
    if name in ("cuda.grid", "cuda.gridsize"):
        n = literal_int(st, node.args[0])
        if n != 1:
            raise st.err(node, f"{name}({n}) returns a tuple: unpack it, e.g. i, j = {name}({n})")
        return st.emit_assign(out, st.temp(), Special("grid.0" if name == "cuda.grid" else "gsize.0"))
    if name in FENCES:
        # a fence orders this thread's memory operations as others observe them and synchronises
        # nothing: kept in every generated kernel where it stood, invisible to the analyses
        # (they never assume a fence orders anything, so none is relied on)
        if node.args or node.keywords:
            raise st.err(node, f"{name}() takes no arguments")
        st.emit_assign(out, st.temp(), Prim(name[len("cuda."):], ()))
        return None
    if name == "cuda.syncwarp":
        # where every thread of the block reaches it (barriers.py checks that, as for syncthreads),
        # the block barrier is a sound, stronger stand-in: it syncs each warp's lanes and orders
        # shared memory at block scope, and the analyses then see it as the barrier it is
        if len(node.args) > 1 or node.keywords:
            raise st.err(node, "cuda.syncwarp takes at most one argument, the lane mask")
        if node.args:
            expression(st, node.args[0], out)
        out.append(Barrier(st.line, warp=True))
        return None
    if name == "cuda.syncthreads":       # under a condition or in a loop: barriers.py checks it is block-uniform
        out.append(Barrier(st.line))
        return None
    if name.startswith("cuda.atomic."):
        op = name.rsplit(".", 1)[1]
        if op not in ("add", "sub") + EXTREMA:
            raise st.err(node, f"cuda.atomic.{op} cannot be differentiated: its result depends on the "
                         f"order in which threads arrive (only add, sub, {', '.join(EXTREMA)} are supported)")
        arr, idx, val = node.args
        if not (isinstance(arr, ast.Name) and arr.id in st.arrays):
            raise st.err(node, "the first argument of an atomic must be an array")
        array, index = element(st, arr.id, idx, node, out)
        value = expression(st, val, out)
        target = st.temp()
        out.append(Atomic(op, array, index, value, target, st.line))
        st.types[target] = st.params[st.arrays[arr.id]].dtype
        return target
    if name in ("cuda.shfl_sync", "cuda.shfl_up_sync", "cuda.shfl_down_sync", "cuda.shfl_xor_sync"):
        mask, value, lane = (expression(st, a, out) for a in node.args)
        op = name[len("cuda."):-len("_sync")]
        t = st.temp()
        out.append(Assign(t, Prim(op, (mask, value, lane)), st.line))
        st.types[t] = st.atom_type(value)
        return t
    if name in ("cuda.shared.array", "cuda.local.array"):
        raise st.err(node, f"{name}(...) must be assigned to a name")
    raise st.err(node, f"`{name}` is not supported by the AD transform yet")


def alloc(st: LoweringState, name: str, call, out):
    space = "shared" if "shared" in ast.unparse(call.func) else "local"
    if st.depth_ctl and space == "shared":
        raise st.err(call, "declare shared arrays at the top level of the kernel")
    if len(call.args) != 2 or call.keywords:      # the normal form has (shape, dtype) positionally
        raise st.err(call, f"`{ast.unparse(call)}`: numba.cuda takes a shared or local array as "
                     "(shape, dtype), with shape and dtype known when the kernel compiles")
    shape_node, dtype_node = call.args
    dims = shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]
    for d in dims:
        if not (isinstance(d, ast.Constant) and isinstance(d.value, int)):
            raise st.err(d, f"the shape `{ast.unparse(shape_node)}` is not a constant: numba.cuda needs "
                         "a shared or local array's shape when the kernel compiles (literals, module "
                         "constants and constant expressions over them)")
    shape = tuple(d.value for d in dims)
    dtype = dtype_of(st, dtype_node)
    local = st.fresh(name) if name in st.taken else name
    st.taken.add(local)
    p = Param(local, space, dtype, len(shape), shape)
    st.params[local] = p
    st.arrays[name] = local
    st.local_arrays.append(p)
    out.append(Alloc(p, st.line))


def dtype_of(st: LoweringState, node) -> str:
    import numpy as np
    obj = None
    if array_dtype(st, node):                  # `dtype=a.dtype`: the array's own dtype
        return array_dtype(st, node)
    if isinstance(node, ast.Name):
        try:
            obj = resolve_global(st.src, node.id) if node.id not in st.env else None
        except KeyError:
            raise st.err(node, f"the array dtype `{node.id}` is not defined in the kernel's module "
                               "(numba refuses it too: NameError)") from None
    elif isinstance(node, ast.Attribute):
        d = dotted(st, node)
        if d:
            obj = d[2]
            for p in d[1]:
                obj = getattr(obj, p, None)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return np.dtype(node.value).name
        except TypeError:
            raise st.err(node, f"unknown dtype {node.value!r}") from None
    if obj is None:
        raise st.err(node, "array dtype must be a numba or numpy type")
    try:
        return np.dtype(str(obj) if type(obj).__module__.startswith("numba") else obj).name
    except TypeError:
        raise st.err(node, f"unknown dtype {ast.unparse(node)}") from None
