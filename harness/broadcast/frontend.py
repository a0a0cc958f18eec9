"""The broadcast/map front end: apply a scalar device function elementwise, as array libraries do.

    broadcast(add, x, y)                          -> a new array, add(x, y) with numpy broadcasting
    broadcast_into(add, Duplicated(out, dout), Const(x), Duplicated(y, dy), mode="reverse")
    map_(add, out, x, y)                          -> the same, with operands of out's shape only

The front end generates an elementwise kernel around `f` (harness/broadcast/kernelgen.py), then
launches it through the engine (harness/engine/runtime/launch.py), so every mode the engine supports works
here too. Two historical designs are kept as engine options, so that reproducers can show the
original failures next to the fix:

- `launch: split` (default; GPUArrays.jl PR 539): every operand is its own kernel argument with its
  own activity, so `x .+ y` with x Const and y Duplicated is just a launch.
  `launch: packed` (GPUArrays.jl today): the operands travel as one tuple argument `bc` with one
  activity, and mixing activities inside it is a MixedActivityError (GPUArrays.jl issue 535). A
  packed launch whose members share one activity is differentiated by splitting the tuple: a tuple
  is only an ABI container, its members are the state, and one activity for the tuple means the
  same activity for each member, so the state, its Jacobian and the shadows are the same.
- `fold_constants: true` (default): types and functions among the operands (`convert_to(numpy.float64,
  x)`, the analog of ForwardDiff.Dual.(x, true); a device function or a closure passed as an
  operand) are compiled into the kernel as constants. `false` reproduces the reverted PR 539: they
  become kernel parameters, and the launch's isbits check refuses them with a KernelError naming
  their position, parameter and nested offenders (CUDA.jl issue 2514).

Broadcasting follows numpy: an operand's shape is aligned with the destination's from the last
dimension; missing leading dimensions are dropped and size-1 dimensions are read at index 0. The
destination is never broadcast: its shape is the result's.
"""
from __future__ import annotations

import inspect
import math
import types as pytypes
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.activity import Active, BatchDuplicated, Const, Duplicated, activity_name, map_arrays, unwrap
from harness.engine.runtime.jobs import CompilerJob
from harness.engine.runtime.launch import Engine, LaunchConfig, LaunchResult, Plan, default_engine
from harness.engine.runtime.launch import numba_type as engine_numba_type
from harness.engine.runtime.signature import classify
from harness.core.errors import ActivityError, KernelError, MixedActivityError
from harness.engine.runtime.isbits import check_argument, is_array_like, is_number, type_name
from harness.broadcast import kernelgen
from harness.broadcast.kernelgen import KernelSpec, Operand

STYLES = ("broadcast", "map")
PACKED_NAME = "bc"
_ANNOTATIONS = (Const, Duplicated, BatchDuplicated, Active)


# ----------------------------------------------------------------------------- shapes

def extrusion(dest_shape: tuple[int, ...], shape: tuple[int, ...], style: str = "broadcast"):
    """Per dimension of an operand of `shape`, whether it is read at index 0 (size 1), or None
    when the operand does not fit the destination (numpy broadcasting for `broadcast`, the very
    same shape for `map`)."""
    dest_shape, shape = tuple(dest_shape), tuple(shape)
    if style == "map":
        return tuple(n == 1 for n in shape) if shape == dest_shape else None
    if len(shape) > len(dest_shape):
        return None
    lead = len(dest_shape) - len(shape)
    if any(n not in (1, dest_shape[lead + j]) for j, n in enumerate(shape)):
        return None
    return tuple(n == 1 for n in shape)


def operand_index(dest_index: tuple[int, ...], extruded: tuple[bool, ...]) -> tuple[int, ...]:
    """The operand element a destination element reads (the generated kernel's index map)."""
    lead = len(dest_index) - len(extruded)
    return tuple(0 if e else dest_index[lead + j] for j, e in enumerate(extruded))


def foldable(value: Any) -> bool:
    """Types and functions: what fold_constants compiles into the kernel."""
    if isinstance(value, type) or isinstance(value, (pytypes.BuiltinFunctionType, np.ufunc)):
        return True
    if type(value).__module__.startswith("numba.core.types"):     # numba.float32 and friends
        return True
    return kernelgen.python_function_or_none(value) is not None


# ----------------------------------------------------------------------------- the launcher

@dataclass
class _Call:
    kernel: Any                       # the generated kernel function
    source: str                       # its file
    params: list[str]
    args: list                        # its annotated arguments
    packed_primal: bool               # a tuple argument: compiled and launched here, not by the engine


class BroadcastLauncher:
    """Engine-like (`backend`, `options`, `launch`, `prepare`) for broadcasts of scalar functions.

    `launch(f, config, dest, *operands, mode=...)` takes the same annotated arguments as
    `Engine.launch`, with f in place of a kernel: the runner and KernelProblem use it unchanged.
    `names` are the parameter names of the generated kernel (destination first); by default f's
    own parameter names after `dest`.
    """

    def __init__(self, engine: Engine | None = None, style: str = "broadcast",
                 names: list[str] | tuple[str, ...] | None = None):
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, not {style!r}")
        self.engine = engine or default_engine()
        self.style = style
        self.names = tuple(names) if names else None
        self._plans: dict[tuple, Plan] = {}                 # packed primal plans, per generated source
        self._kernels: dict[KernelSpec, tuple[Any, str]] = {}  # generated kernels, per spec

    @property
    def backend(self):
        return self.engine.backend

    @property
    def options(self):
        return self.engine.options

    def config_for(self, dest, block=None) -> LaunchConfig:
        """One thread per destination element."""
        size = int(math.prod(np.shape(dest)))
        if isinstance(block, (tuple, list)):
            block = int(math.prod(block))
        return LaunchConfig.threads(max(1, size), int(block) if block else 128)

    # ------------------------------------------------------------------ Engine-like interface
    def launch(self, f, config: LaunchConfig | None, *args, mode: str = "primal") -> LaunchResult:
        call = self._lower(f, args, mode)
        config = config or self.config_for(unwrap(args[0]))
        if not call.packed_primal:
            return self.engine.launch(call.kernel, config, *call.args, mode=mode)
        plan, infos = self._packed_plan(call)
        if self.backend.can_launch:
            values = [_kernel_value(i) for i in infos]
            self.backend.launch(plan.compiled, config.grid, config.block, values)
        return LaunchResult(plan=plan)

    def prepare(self, f, config: LaunchConfig | None, args, mode: str):
        call = self._lower(f, tuple(args), mode)
        if call.packed_primal:
            return self._packed_plan(call)
        config = config or self.config_for(unwrap(args[0]))
        return self.engine.prepare(call.kernel, config, call.args, mode)

    def generated(self, f, *args, mode: str = "primal") -> tuple[Any, str]:
        """(the generated kernel, its source path) for these arguments, without launching."""
        call = self._lower(f, args, mode)
        return call.kernel, call.source

    # ------------------------------------------------------------------ lowering
    def _names(self, f, n: int) -> tuple[str, ...]:
        if self.names is not None:
            if len(self.names) != n:
                raise KernelError(f"{len(self.names)} argument names given for {n} arguments")
            return self.names
        fn = kernelgen.python_function_or_none(f)
        if fn is not None:
            params = list(inspect.signature(fn).parameters)
            if len(params) == n - 1 and "dest" not in params and len(set(params)) == len(params):
                return ("dest", *params)
        return ("dest", *(f"a{k}" for k in range(n - 1)))

    def _is_array(self, value) -> bool:
        return self.backend.is_array(value) or is_array_like(value)

    def _lower(self, f, args: tuple, mode: str) -> _Call:
        if not args:
            raise KernelError(f"a {self.style} needs a destination array")
        names = self._names(f, len(args))
        anns = [a if isinstance(a, _ANNOTATIONS) else Const(a) for a in args]
        values = [unwrap(a) for a in anns]
        dest = values[0]
        if not self._is_array(dest) or len(np.shape(dest)) == 0:
            raise KernelError(f"argument 0 ('{names[0]}'): the destination of a {self.style} must be an "
                              f"array with at least one dimension; got {type_name(dest)}"
                              + (f" of shape {tuple(np.shape(dest))}" if self._is_array(dest) else ""),
                              argument=0, param=names[0])
        fold = bool(self.options.fold_constants)
        packed = self.options.launch == "packed"
        if self.options.launch not in ("split", "packed"):
            raise ValueError(f"engine option launch must be split or packed, not {self.options.launch!r}")
        dest_shape = tuple(dest.shape)
        operands = []
        for pos, (name, ann, value) in enumerate(zip(names[1:], anns[1:], values[1:]), start=1):
            if self._is_array(value):
                shape = tuple(value.shape)
                extruded = extrusion(dest_shape, shape, self.style)
                if extruded is None:
                    rule = ("numpy broadcasting" if self.style == "broadcast"
                            else "a map needs every operand in the destination's shape")
                    raise KernelError(f"argument {pos} ('{name}') of shape {shape} does not fit the destination "
                                      f"'{names[0]}' of shape {dest_shape} ({rule})", argument=pos, param=name)
                if len(shape) == 0:        # kernels index no 0-d arrays: read a 1-element view at 0
                    anns[pos] = ann = _one_element_view(ann)
                    values[pos] = value = ann.value
                    shape, extruded = (1,), (True,)
                operands.append(Operand(name, "array", len(shape), extruded))
            elif is_number(value):
                operands.append(Operand(name, "scalar"))
            elif foldable(value):
                if not isinstance(ann, Const):
                    raise ActivityError(f"argument {pos} ('{name}') is {type_name(value)}, a compile-time "
                                        f"constant: it is always const (got {activity_name(ann)})",
                                        argument=pos, param=name)
                operands.append(Operand(name, "folded", const=value, const_ref=kernelgen.reference(value))
                                if fold else Operand(name, "value"))
            else:                     # left to the launch's isbits check (tuples pass, the rest is refused)
                operands.append(Operand(name, "value"))

        members = [pos for pos, op in enumerate(operands, start=1) if op.kind != "folded"]

        def spec(packed_: bool) -> KernelSpec:
            return KernelSpec(f, kernelgen.reference(f), self.style, names[0], len(dest_shape),
                              tuple(operands), packed_, fold, PACKED_NAME)

        if packed:
            bc = tuple(values[k] for k in members)
            if mode == "primal":
                kernel, path = self._build(spec(True))
                return _Call(kernel, path, [names[0], PACKED_NAME], [anns[0], Const(bc)], True)
            # A derivative launch: the packed argument must be isbits and of one activity; then
            # it is differentiated split (equivalent; see the module docstring).
            check_argument(1, PACKED_NAME, bc, is_array=self.backend.is_array)
            acts = [(names[k], activity_name(anns[k])) for k in members]
            if len({a for _, a in acts}) > 1:
                listed = ", ".join(f"{n} is {a}" for n, a in acts)
                raise MixedActivityError(
                    f"packed argument 1 ('{PACKED_NAME}') mixes activities: {listed}; split the arguments "
                    "(launch: split) or give them one activity", argument=1, param=PACKED_NAME)
        kernel, path = self._build(spec(False))
        return _Call(kernel, path, [names[0]] + [names[k] for k in members],
                     [anns[0]] + [anns[k] for k in members], False)

    def _build(self, spec: KernelSpec) -> tuple[Any, str]:
        """The generated kernel of `spec` and its source path, written and loaded once per launcher."""
        if spec not in self._kernels:
            self._kernels[spec] = kernelgen.build(spec)
        return self._kernels[spec]

    # ------------------------------------------------------------------ packed primal launches
    def _packed_plan(self, call: _Call):
        """A tuple kernel argument: the engine's launcher types arrays and scalars only, so the
        front end compiles this one itself (after the same argument classification and isbits
        check) and records the compile job."""
        infos = classify(self.backend, call.params, tuple(call.args), "primal")
        key = (call.source, tuple(i.type_key() for i in infos))     # the content-hashed generated file
        plan = self._plans.get(key)
        if plan is None:
            target = self.backend.config(self.options.fastmath, self.options.debug)
            job = CompilerJob(call.kernel.__name__, "primal", target, kernel=True)
            job.source = call.source
            signature = tuple(_numba_type(i) for i in infos)
            compiled = self.backend.compile(call.kernel, signature, target)
            plan = Plan("primal", compiled, key, job, source_path=call.source,
                        ptx=compiled if isinstance(compiled, str) else None)
            self._plans[key] = plan
        return plan, infos


def _one_element_view(ann):
    """The same annotation over 1-element views of a 0-d array and its shadows."""
    return map_arrays(ann, lambda a: a.reshape(1) if a is not None and hasattr(a, "reshape") else a)


def _numba_type(info):
    """The engine's numba type of an argument, and of a packed tuple argument member by member."""
    if info.kind == "tuple":
        from numba import types
        return types.BaseTuple.from_types([_numba_type(m) for m in info.members])
    return engine_numba_type(info)


def _kernel_value(info):
    if info.kind == "tuple":
        return tuple(_kernel_value(m) for m in info.members)
    if info.kind == "scalar":
        return np.dtype(info.dtype).type(info.value)
    return info.value


# ----------------------------------------------------------------------------- the functional API

# Launchers per engine (dropped with it): their generated kernels and plans are the engine's.
_launchers: "weakref.WeakKeyDictionary[Engine, dict]" = weakref.WeakKeyDictionary()


def launcher_for(engine: Engine | None = None, style: str = "broadcast",
                 names: list[str] | tuple[str, ...] | None = None) -> BroadcastLauncher:
    """A launcher per (engine, style, names), so generated kernels and plans are reused."""
    engine = engine or default_engine()
    key = (style, tuple(names) if names else None)
    launchers = _launchers.setdefault(engine, {})
    if key not in launchers:
        launchers[key] = BroadcastLauncher(engine, style, names)
    return launchers[key]


def broadcast(f, *args, engine: Engine | None = None, dtype=None, names=None, block: int = 128):
    """`f.(args...)`: a new array holding f applied elementwise under numpy broadcasting (primal).

    The result's dtype is `dtype`, else f itself when f is a numpy scalar type
    (`broadcast(numpy.float64, x)`), else numpy's result type of the operands."""
    launcher = launcher_for(engine, "broadcast", names)
    values = [unwrap(a) for a in args]
    arrays = [v for v in values if launcher._is_array(v)]
    if not arrays:
        raise KernelError("broadcast needs at least one array operand to size its result")
    shape = np.broadcast_shapes(*[tuple(a.shape) for a in arrays])
    if dtype is None:
        if isinstance(f, type) and issubclass(f, np.generic):
            dtype = f
        else:
            dtype = np.result_type(*[a.dtype for a in arrays], *[v for v in values if is_number(v)])
    dest = launcher.backend.zeros(shape, dtype)
    launcher.launch(f, launcher.config_for(dest, block), dest, *args, mode="primal")
    return dest


def broadcast_into(f, dest, *args, mode: str = "primal", engine: Engine | None = None, names=None,
                   block: int = 128) -> LaunchResult:
    """`dest .= f.(args...)` in any mode; arguments may carry activities, as with Engine.launch."""
    launcher = launcher_for(engine, "broadcast", names)
    return launcher.launch(f, launcher.config_for(unwrap(dest), block), dest, *args, mode=mode)


def map_(f, dest, *args, mode: str = "primal", engine: Engine | None = None, names=None,
         block: int = 128) -> LaunchResult:
    """`map!(f, dest, args...)`: as broadcast_into, with every array operand in dest's shape."""
    launcher = launcher_for(engine, "map", names)
    return launcher.launch(f, launcher.config_for(unwrap(dest), block), dest, *args, mode=mode)
