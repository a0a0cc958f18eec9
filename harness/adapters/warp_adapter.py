"""NVIDIA Warp adapter: the case's numba.cuda kernel as a `wp.kernel`, reverse mode through `wp.Tape`.

Translation (harness/adapters/translate.py walks the kernel; this file spells it in Warp):
- `cuda.grid(n)` is `wp.tid()` over a launch of grid x block threads per dimension; threadIdx,
  blockIdx, blockDim and gridDim are derived from it and the launch's block shape.
- numba's types are kept explicit: float literals are `wp.float64(...)` and every promotion numba
  makes (float32 with float64 or an integer gives float64) is a cast, so the Warp kernel computes
  in the precision the numba kernel does. Integers are int32 (Warp's index type).
- `a[i] += v` is Warp's `a[i] += v` (which Warp compiles as an atomic add: for an element one
  thread owns, the same primal); `cuda.atomic.add/sub/max/min` are `wp.atomic_*`.
- device functions are `@wp.func`, one per argument-type signature.

Activities: Duplicated arrays are `requires_grad` arrays whose `.grad` is seeded with the shadow
(the final state's cotangent) before `tape.backward()` and read back after it. Warp 1.19 consumes
the gradient of an element a kernel stores to (its `array_store` adjoint zeroes it), which is the
harness's convention, so no conversion happens. Warp has no forward mode, no adjoints for scalar
kernel arguments and no batched shadows: those are UnsupportedError, never an emulation.
"""
from __future__ import annotations

import math

import numpy as np

from harness.engine.rules.ops import spelled_by
from harness.core.errors import UnsupportedError
from harness.adapters.adapter import Adapter, Arg
from harness.adapters.limits import LIMITS
from harness.adapters.translate import BOOL, F32, F64, INT, INT_ARRAYS, Arr, Function, LaunchInfo, Target

_SCALAR = {F32: "wp.float32", F64: "wp.float64", INT: "wp.int32", BOOL: "wp.bool"}
_ELEM = {F32: "wp.float32", F64: "wp.float64", BOOL: "wp.bool",
         **{code: f"wp.{'u' if code[0] == 'u' else ''}int{code[1:]}" for code in INT_ARRAYS}}


class WarpTarget(Target):
    name = "Warp"
    system = "warp"
    math = spelled_by("warp")      # the op table's Warp spellings (harness/engine/rules/ops.py)

    def module_header(self):
        return ["import warp as wp"]

    def literal(self, value, t):
        if t == INT:
            return str(int(value))
        if math.isnan(value):
            return f"{_SCALAR[t]}(wp.nan)"
        if math.isinf(value):
            return f"{_SCALAR[t]}({'-' if value < 0 else ''}wp.inf)"
        return f"{_SCALAR[t]}({float(value)!r})"

    def cast(self, code, src, dst):
        if src is None or dst is None or src == dst:
            return code
        if src == BOOL:
            return f"wp.where({code}, {self.literal(1, dst) if dst != INT else '1'}, " \
                   f"{self.literal(0, dst) if dst != INT else '0'})"
        if src == INT and code.isidentifier():
            # Warp 1.19 retypes a name bound to an integer constant (`m = 2`, or the counter of a
            # range loop it unrolls) when it is cast: after `wp.float64(m)`, `i + m` fails with
            # "Input types must be the same". Casting a copy (`wp.int32(m)`) leaves `m` an integer.
            code = f"wp.int32({code})"
        return f"{_SCALAR[dst]}({code})"

    def variable_int(self, code):
        return f"wp.int32({code})"       # a bare literal is a constant in Warp: a loop could not update it

    def variable_bool(self, code):
        return f"wp.bool({code})"        # likewise

    def _sig(self, fn: Function) -> str:
        parts = []
        for p in fn.params:
            if isinstance(p.type, Arr):
                parts.append(f"{p.name}: wp.array(dtype={_ELEM[p.type.dtype]}, ndim={p.type.ndim})")
            else:
                parts.append(f"{p.name}: {_SCALAR[p.type]}")
        return ", ".join(parts)

    def kernel_header(self, fn, launch: LaunchInfo):
        tids = ", ".join(f"_t{k}" for k in range(len(launch.threads)))
        return ["@wp.kernel", f"def {fn.name}({self._sig(fn)}):", f"    {tids} = wp.tid()"]

    def func_header(self, fn):
        return ["@wp.func", f"def {fn.name}({self._sig(fn)}):"]

    def thread_index(self, dim):
        return f"_t{dim}"

    def load(self, arr, index, t):
        code = f"{arr}[{', '.join(index)}]"
        return f"wp.int32({code})" if _other_int(t) else code

    def store(self, arr, index, value, t):
        if _other_int(t):
            value = f"{_ELEM[t.dtype]}({value})"
        return f"{arr}[{', '.join(index)}] = {value}"

    def wrap_index(self, code, extent):
        return f"wp.where({code} < 0, {code} + {extent}, {code})"

    def select(self, cond, a, b):
        return f"wp.where({cond}, {a}, {b})"

    def atomic(self, op, arr, index, value, t):
        if _other_int(t):          # Warp wants the array's own type; the old value is an int32 like a load
            return f"wp.int32(wp.atomic_{op}({arr}, {', '.join(index)}, {_ELEM[t.dtype]}({value})))"
        return f"wp.atomic_{op}({arr}, {', '.join(index)}, {value})"

    def local_array(self, name, shape, elem):
        if len(shape) == 1:
            return f"{name} = wp.vector(dtype={_SCALAR[elem] if elem != 'i32' else 'wp.int32'}, length={shape[0]})"
        return f"{name} = wp.matrix(shape={tuple(shape)!r}, dtype={_SCALAR[elem] if elem != 'i32' else 'wp.int32'})"

    def pow(self, a, b):
        return f"wp.pow({a}, {b})"

    def min_max(self, name, a, b):
        return f"wp.{name}({a}, {b})"


class WarpAdapter(Adapter):
    name = "warp"
    system = "warp"
    target = WarpTarget()
    # Warp's `optimization_level` for the generated modules; None keeps Warp's default (3). The
    # differential fuzzer compiles at 0: compiling is most of a generated kernel's cost there.
    optimization_level: int | None = None

    def __init__(self, backend):
        super().__init__(backend)
        import warp as wp
        wp.config.quiet = True
        wp.init()
        self.wp = wp
        self.device = "cuda:0" if backend.name == "cuda" and wp.is_cuda_available() else "cpu"

    @property
    def version(self) -> str:
        return self.wp.__version__

    def refuse_mode(self, args: list[Arg], mode: str) -> str | None:
        if mode == "forward":
            return ("Warp has no forward-mode AD: a wp.kernel compiles a primal and an adjoint only "
                    f"(wp.Tape records launches for reverse mode; see {LIMITS['forward'].warp_link})")
        if mode == "reverse":
            for a in args:
                if a.kind == "scalar" and a.differentiable:
                    return (f"argument {a.position} ('{a.name}'): Warp returns no adjoint for a scalar kernel "
                            f"argument (Active); pass it as a one-element array instead (see {LIMITS['active_scalar'].warp_link})")
        return None

    def run(self, module, fname, args, launch, mode):
        wp = self.wp
        kernel = getattr(module, fname)
        grad = mode == "reverse"
        inputs, arrays = [], []
        for a in args:
            if a.kind == "array":
                arr = wp.array(a.host, dtype=_wp_dtype(wp, a.host.dtype), device=self.device,
                               requires_grad=grad and a.differentiable)
                arrays.append((a, arr))
                inputs.append(arr)
            else:
                inputs.append(float(a.host) if a.type in (F32, F64) else
                              bool(a.host) if a.type == BOOL else int(a.host))
        dim = launch.threads if len(launch.threads) > 1 else launch.threads[0]
        if not grad:
            wp.launch(kernel, dim=dim, inputs=inputs, device=self.device)
        else:
            tape = wp.Tape()
            with tape:
                wp.launch(kernel, dim=dim, inputs=inputs, device=self.device)
            for a, arr in arrays:
                if a.differentiable:
                    arr.grad.assign(a.shadows[0].astype(a.host.dtype))
            tape.backward()
        wp.synchronize_device(self.device)
        for a, arr in arrays:
            a.host[...] = arr.numpy()
            if grad and a.differentiable:
                a.shadows[0][...] = arr.grad.numpy()
        return {}


    def configure_module(self, module) -> None:
        if self.optimization_level is not None:
            self.wp.set_module_options({"optimization_level": self.optimization_level}, module)

    def run_native(self, kernel, args, launch, mode):
        from harness.adapters.warp_native import run
        return run(self.wp, self.device, kernel, args, launch, mode)


def _wp_dtype(wp, dtype):
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return getattr(wp, f"{'u' if dt.kind == 'u' else ''}int{dt.itemsize * 8}")
    return {np.dtype(np.float32): wp.float32, np.dtype(np.float64): wp.float64, np.dtype(np.bool_): wp.bool}[dt]


def _other_int(t: Arr) -> bool:
    """An integer array whose elements are not the translated code's int32 (loads and stores cast)."""
    return t.dtype in INT_ARRAYS and t.dtype != "i32"
