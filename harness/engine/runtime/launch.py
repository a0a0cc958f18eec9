"""The split-argument launcher: each kernel argument is passed on its own with its own activity.

    launch(kernel, LaunchConfig.threads(n), Duplicated(out, dout), Const(x), Active(a), mode="reverse")

Derivative kernels are generated on first use for each (kernel, argument types, activities,
batch width, launch shape) and cached in memory and on disk.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import astuple, dataclass, field
from typing import Any

import numpy as np

from harness.core.records import MODES
from harness.core.target import default_backend
from harness.core.errors import KernelFaultError, UnsupportedError
from harness.engine.analyses.ownership import LaunchShape
from harness.engine.runtime.cache import load_function, write_module
from harness.engine.analyses.memory import argument_buffers, check_nested_aliasing
from harness.engine.emission import coarsen
from harness.engine.emission.emit_uniform import FINISH_LANES, SPREAD, slot_count
from harness.engine.runtime.nested import nested_arrays, uses_autodiff
from harness.engine.frontend.source import parse_kernel, python_function
from harness.engine.guard import internal_errors_refused, numba_refusals_named
from harness.engine.analyses.activity import extremum_arrays
from harness.engine.rules.libm import primal_needs_engine
from harness.engine.rules.rng import numpy_dtype
from harness.engine.ir.ssa import Loop, Param, file_of, walk
from harness.engine.runtime.jobs import CompilerJob
from harness.engine.options import EngineOptions
from harness.engine.pipeline import AUTODIFF_KERNEL_PASSES, PassState, run_passes, verify_by_default
from harness.engine.seams import Seams, default_seams
from harness.engine.runtime.signature import ArgInfo, classify


@dataclass(frozen=True)
class LaunchConfig:
    grid: tuple[int, ...]
    block: tuple[int, ...]

    def __post_init__(self):
        # numba accepts `kernel[4, 128]`; take the same spellings here, and say which dimension is
        # wrong instead of failing later inside the engine
        for name in ("grid", "block"):
            value = getattr(self, name)
            dims = tuple(value) if isinstance(value, (tuple, list)) else (value,)
            if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                                                  and d >= 1 for d in dims):
                raise ValueError(f"LaunchConfig {name}={value!r}: expected a positive int or a tuple of "
                                 f"1 to 3 positive ints")
            object.__setattr__(self, name, tuple(int(d) for d in dims))

    @staticmethod
    def threads(n, block: int | tuple = 128) -> "LaunchConfig":
        """Enough blocks to cover n threads (n may be a tuple for 2-D and 3-D launches)."""
        n = tuple(n) if isinstance(n, (tuple, list)) else (int(n),)
        block = tuple(block) if isinstance(block, (tuple, list)) else \
            ((block,) if len(n) == 1 else (16, 16) if len(n) == 2 else (8, 8, 4))
        block = tuple(min(b, max(1, k)) for b, k in zip(block, n))
        grid = tuple(max(1, math.ceil(k / b)) for k, b in zip(n, block))
        return LaunchConfig(grid, block)

    @staticmethod
    def of(grid, block) -> "LaunchConfig":
        as_tuple = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (int(v),)
        return LaunchConfig(as_tuple(grid), as_tuple(block))

    @property
    def shape(self) -> LaunchShape:
        ndim = max(len(self.grid), len(self.block))
        g = self.grid + (1,) * (ndim - len(self.grid))
        b = self.block + (1,) * (ndim - len(self.block))
        return LaunchShape(tuple(d for d in range(ndim) if g[d] * b[d] > 1),
                           tuple(d for d in range(ndim) if b[d] > 1),
                           tuple(d for d in range(ndim) if g[d] > 1))


def as_launch_config(config) -> LaunchConfig:
    """A LaunchConfig, or numba's `kernel[grid, block]` pair as a tuple: anything else is the
    caller's mistake, said in the caller's terms."""
    if isinstance(config, LaunchConfig):
        return config
    if isinstance(config, (tuple, list)) and len(config) == 2:
        return LaunchConfig(*config)
    raise TypeError(f"launch configuration {config!r}: expected LaunchConfig(grid, block) or a "
                    f"(grid, block) pair, as in numba's kernel[grid, block]")


@dataclass
class Plan:
    """A compiled kernel for one launch signature, and what it took to build it."""
    mode: str
    compiled: Any
    infos_key: tuple
    job: CompilerJob
    source_path: str | None = None
    active_names: tuple[str, ...] = ()
    ptx: str | None = None
    tape_overflow: bool = False       # the kernel reports loops that outran the tape (by line)
    loop_files: dict = field(default_factory=dict)   # a loop's line -> its file (inlined helpers)
    uniform_slots: int = 0            # scratch slots of uniform-index adjoints (emit_uniform.py)
    finish: Any = None                # the one-warp kernel that folds them into the shadows
    consume: Any = None               # gathered adjoints: the kernel that zeroes the stored cotangents
    coarsen: int = 0                  # coarsened reverse (coarsen.py): physical blocks per multiprocessor
    extrema: tuple = ()               # (array, its number of atomic max/min statements), each array once
    extremum_passes: tuple = ()       # the two kernels that find their winners
    nested_arrays: tuple = ()         # device-side autodiff: the arrays each call passes (aliasing)
    signature: tuple = ()             # the numba types the derivative kernel was compiled for


@dataclass
class LaunchResult:
    adjoints: dict[str, Any] = field(default_factory=dict)   # Active scalar -> adjoint (tuple when batched)
    plan: Plan | None = None

    @property
    def jobs(self) -> list[CompilerJob]:
        return self.plan.job.tree() if self.plan else []


MAX_CACHED_SITES = 256                # call sites whose packed launch Engine.launch keeps


@dataclass
class BoundLaunch:
    """A plan with its arguments already flattened (Engine.bind)."""
    backend: Any
    plan: Plan
    config: LaunchConfig
    kernel_args: list
    active_out: Any = None

    def __post_init__(self):
        grid, block, args = self.config.grid, self.config.block, self.kernel_args
        self.grid = grid                      # the physical grid of the derivative kernel
        if self.plan.coarsen:                 # a capped 1-D grid looping over the real one (coarsen.py)
            args = args + coarsen.grid_args(grid)
            self.grid = (coarsen.physical_blocks(self.backend, coarsen.block_count(grid), self.plan.coarsen,
                                                 self.plan.compiled, block),)
        self._steps = [self.backend.prepare_launch(self.plan.compiled, self.grid, block, args)]
        if self.plan.consume is not None:     # gathered adjoints (emit_gather.py): after every read
            self._steps.append(self.backend.prepare_launch(self.plan.consume, grid, block, args))
        if self.plan.finish is not None:      # uniform-index adjoints folded into their shadows
            self._steps.append(self.backend.prepare_launch(self.plan.finish, (1,), (FINISH_LANES,), args))

    def launch(self) -> None:
        """Enqueue one launch; no synchronisation, no result copied back."""
        for step in self._steps:
            step()


class CachedLaunch(BoundLaunch):
    """Engine.launch's packed launch for one call site, with the description of the arguments it
    was packed for (launch_cache.fingerprint): a call whose arguments match runs it again."""

    def __init__(self, backend, plan, config, kernel_args, active_out, overflow, width: int):
        self.overflow, self.width, self.fingerprint = overflow, width, None
        super().__init__(backend, plan, config, kernel_args, active_out)

    def remember(self, described: tuple, options: tuple) -> None:
        """Keep the description of the arguments and the engine options for later calls. Packed,
        the launch needs only the engine's own scratch buffers (the arguments' tail) alive; a
        backend that did not pack keeps the arguments in its closure. So the caller's arrays are
        not held by the cache."""
        self.fingerprint, self.options = described, options
        tail = (int(self.active_out is not None) + int(bool(self.plan.uniform_slots))
                + int(self.overflow is not None))
        self.kernel_args = self.kernel_args[len(self.kernel_args) - tail:] if tail else []


def numba_type(info: ArgInfo, layout: str | None = None):
    from numba import types
    from numba.np.numpy_support import from_dtype
    scalar = from_dtype(numpy_dtype(info.dtype))      # a record's dtype goes by a name (rules/rng.py)
    if info.kind == "array":
        return types.Array(scalar, info.ndim, layout or info.layout)
    return scalar


def derivative_arg_types(infos: list[ArgInfo], mode: str, width: int) -> list:
    """The numba types of a derivative kernel's leading parameters: each argument, then its
    shadows (arrays) or tangents (forward scalars). A shadow gets its own layout, not its primal's."""
    types = []
    for i in infos:
        types.append(numba_type(i))
        if i.differentiable and i.kind == "array":
            types += [numba_type(i, i.shadow_layout(k)) for k in range(width)]
        elif i.differentiable and mode == "forward":
            types += [numba_type(i)] * width
    return types


class Engine:
    def __init__(self, backend=None, options: EngineOptions | None = None, seams: Seams | None = None,
                 verify_ir: bool | None = None):
        """`seams`: the replaceable parts (rules, adjoint emitters, analyses, option defaults;
        harness/engine/seams.py), default_seams() when not given. `verify_ir`: run the IR verifier
        after every pass (pipeline.py; default: the HARNESS_VERIFY_IR environment variable)."""
        self.verify_ir = verify_by_default() if verify_ir is None else verify_ir
        self.backend = backend or default_backend()
        self.seams = seams or default_seams()
        self.options = options or EngineOptions.from_dict(None, self.seams.option_defaults)
        self._plans: dict[tuple, Plan] = {}
        self._sites: OrderedDict = OrderedDict()     # (kernel, mode, config) -> CachedLaunch
        self._sources: dict[Any, Any] = {}      # function -> its parsed source

    # ------------------------------------------------------------------ public
    @property
    def _emit(self) -> dict:
        """The code generator's seams."""
        return {"emitters": self.seams.emitters, "rules": self.seams.rules}

    def launch(self, kernel, config: LaunchConfig, *args, mode: str = "primal") -> LaunchResult:
        """Launch, wait for the kernel, check for faults and tape overflow, return Active adjoints.

        Repeated calls from one call site (same kernel, mode, launch configuration and engine
        options) with arguments of the same description (launch_cache.py: types, dtypes, shapes,
        strides, data pointers, scalar values) skip classification, the aliasing checks and the
        argument packing: the cached, already packed launch runs again."""
        config = as_launch_config(config)
        site = (kernel, mode, config)
        sites = self._sites
        described = self.seams.launch_fingerprint(args)
        options = tuple(vars(self.options).values())
        try:
            cached = sites.get(site)
        except TypeError:                     # an unhashable kernel object: no cache for it
            cached, described = None, None
        if cached is not None:
            if described is not None and cached.fingerprint == described and cached.options == options:
                sites.move_to_end(site)
                return self._run(cached, kernel, mode, site)
            del sites[site]
        plan, infos = self.prepare(kernel, config, args, mode)
        if not self.backend.can_launch:
            return LaunchResult(plan=plan)
        with internal_errors_refused(python_function(kernel), f"packing the arguments of its {mode} launch"):
            kernel_args, active_out, overflow = self._flatten(infos, mode, plan)
            if plan.extrema:                  # the winners depend on the values: found before every launch
                kernel_args += self._find_winners(plan, infos, config)
        width = max([i.width for i in infos] + [1])
        entry = CachedLaunch(self.backend, plan, config, kernel_args, active_out, overflow, width)
        if not plan.extrema and described is not None:
            entry.remember(described, options)
            sites[site] = entry
            while len(sites) > MAX_CACHED_SITES:
                sites.popitem(last=False)
        return self._run(entry, kernel, mode, site)

    def _run(self, entry: "CachedLaunch", kernel, mode: str, site) -> LaunchResult:
        plan = entry.plan
        if entry.active_out is not None:
            entry.active_out.fill(0)          # each launch returns its own adjoints
        try:
            entry.launch()
            self.backend.synchronize()        # a fault surfaces here, attributed to this launch
        except Exception as exc:
            self._sites.pop(site, None)       # its scratch may be left half written
            fault = self.backend.fault_of(exc)
            if fault is None:
                raise
            raise KernelFaultError(f"kernel {plan.job.function} ({mode}) faulted on {self.backend.name}: {fault}") from exc
        if entry.overflow is not None:
            line = int(self.backend.to_host(entry.overflow)[0])
            if line:
                self._sites.pop(site, None)
                file = plan.loop_files.get(line) or self._source(python_function(kernel)).file
                raise UnsupportedError(
                    f"the loop at line {line} ran more than {self.options.tape_size} iterations in a thread: "
                    f"its reverse sweep cannot replay them (raise engine option tape_size)",
                    file=file, line=line)
        result = LaunchResult(plan=plan)
        if entry.active_out is not None:
            values = self.backend.to_host(entry.active_out)
            width = entry.width
            for k, name in enumerate(plan.active_names):
                lanes = tuple(float(values[k * width + j]) for j in range(width))
                result.adjoints[name] = lanes if width > 1 else lanes[0]
        return result

    def bind(self, kernel, config: LaunchConfig, *args, mode: str = "primal") -> "BoundLaunch":
        """Classify the arguments, build the plan and flatten the kernel's arguments once: the
        returned BoundLaunch only launches, asynchronously (for benchmarks and repeated steps).
        It reuses the same buffers on every launch, as a training loop would."""
        config = as_launch_config(config)
        plan, infos = self.prepare(kernel, config, args, mode)
        if plan.extrema:
            raise UnsupportedError("bind: atomic max/min kernels find their winners before every launch; "
                                   "use Engine.launch")
        with internal_errors_refused(python_function(kernel), f"packing the arguments of its {mode} launch"):
            kernel_args, active_out, _ = self._flatten(infos, mode, plan)
        return BoundLaunch(self.backend, plan, config, kernel_args, active_out)

    def prepare(self, kernel, config: LaunchConfig, args, mode: str):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        fn = python_function(kernel)
        config = as_launch_config(config)
        with internal_errors_refused(fn, f"preparing its {mode} launch"):
            return self._prepare(fn, config, args, mode)

    def _prepare(self, fn, config: LaunchConfig, args, mode: str):
        params = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        infos = classify(self.backend, params, tuple(args), mode)
        if mode != "primal":
            self.seams.check_arguments(argument_buffers(infos))
        # everything a plan's decisions depend on: the function itself (not its id, which a new
        # function may reuse), activities and types, batch width, the launch shape (ownership and
        # the cross-thread checks), and the engine options (tape size, nested configuration, ...)
        nested = mode == "primal" and uses_autodiff(self._source(fn))
        key = (fn, mode, tuple(i.type_key() for i in infos), max(i.width for i in infos),
               config.shape if mode != "primal" or nested else None, astuple(self.options))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._build(fn, infos, config, mode, key)
            self._plans[key] = plan
        if plan.nested_arrays:
            check_nested_aliasing(plan.nested_arrays, {i.name: i.value for i in infos},
                                  check=self.seams.check_arguments)
        return plan, infos

    def _source(self, fn):
        src = self._sources.get(fn)
        if src is None:
            src = self._sources[fn] = parse_kernel(fn)
        return src

    # ------------------------------------------------------------------ building
    def _build(self, fn, infos: list[ArgInfo], config: LaunchConfig, mode: str, key) -> Plan:
        target = self.backend.config(self.options.fastmath, self.options.debug)
        job = CompilerJob(fn.__name__, mode, target, kernel=True)
        src = self._source(fn)
        params = [Param(i.name, i.kind, i.dtype, i.ndim) for i in infos]
        if mode == "primal":
            if uses_autodiff(src) or primal_needs_engine(src, params):
                return self._build_nested(src, infos, params, config, job, key)
            sig = tuple(numba_type(i) for i in infos)
            with numba_refusals_named(fn):
                compiled = self.backend.compile(fn, sig, target)
            return Plan(mode, compiled, key, job, ptx=compiled if isinstance(compiled, str) else None)
        st = run_passes(PassState(src, params, infos, mode, config.shape, job, self.seams, self.options),
                        verify_ir=self.verify_ir)
        ir, activity, sig, extrema, fname, source = st.ir, st.activity, st.sig, st.extrema, st.fname, st.source
        width = sig.width
        path = write_module(f"{fn.__name__}__{mode}", source)
        job.source = str(path)
        gen_fn = load_function(path, fname)
        types = derivative_arg_types(infos, mode, width)
        actives = [i.name for i in infos if i.kind == "scalar" and i.differentiable]
        from numba import types as nt
        if mode == "reverse" and actives:
            types.append(nt.Array(nt.float64, 1, "C"))
        slots = slot_count(ir, activity, sig.owned, width) if mode == "reverse" else 0
        if slots:
            types.append(nt.Array(nt.float64, 1, "C"))
        overflow = mode == "reverse" and any(isinstance(s, Loop) for s in walk(ir.body))
        if overflow:
            types.append(nt.Array(nt.int32, 1, "C"))
        scratch, passes = [], ()
        for name in extremum_arrays(extrema):  # per array: S (final values), I (initial values), W (winners),
            arr = next(i for i in infos if i.name == name)   # V (each contribution's value)
            like = nt.Array(numba_type(arr).dtype, arr.ndim, "C")
            scratch.append((name, [like, like, nt.Array(nt.int64, arr.ndim, "C"),
                                   nt.Array(numba_type(arr).dtype, 1, "C")]))
        if extrema:
            primal_types = [numba_type(i) for i in infos]
            passes = tuple(self.backend.compile(load_function(path, f"{ir.name}__{m}"), tuple(primal_types + extra),
                                                target)
                           for m, extra in (("extrema1", [x for _, t in scratch for x in (t[0], t[3])]),
                                            ("extrema2", [x for _, t in scratch for x in t])))
            types += [x for _, t in scratch for x in t]
        coarsened = sig.coarsen > 0 and mode == "reverse"
        if coarsened:                         # the real grid, after every other argument (coarsen.py)
            types += [nt.int64] * len(coarsen.GRID_PARAMS)
        compiled = self.backend.compile(gen_fn, tuple(types), target)
        finish = self.backend.compile(load_function(path, f"{fname}_finish"), tuple(types), target) if slots else None
        consume = self.backend.compile(load_function(path, f"{fname}_consume"), tuple(types), target) \
            if sig.gather else None
        return Plan(mode, compiled, key, job, source_path=str(path), active_names=tuple(actives), signature=tuple(types),
                    ptx=compiled if isinstance(compiled, str) else None, tape_overflow=overflow,
                    uniform_slots=slots, finish=finish, consume=consume,
                    coarsen=self.options.coarsen_blocks_per_sm if coarsened else 0,
                    loop_files={s.line: file_of(ir, s) for s in walk(ir.body) if isinstance(s, Loop)},
                    extrema=tuple((a, sum(1 for s in extrema if s.array == a)) for a, _ in scratch),
                    extremum_passes=passes)

    def _build_nested(self, src, infos, params, config, job, key) -> Plan:
        """A kernel calling autodiff on the device: each derivative as a device function (a child
        job inheriting the kernel's configuration) and the kernel's primal around them
        (pipeline.AUTODIFF_KERNEL_PASSES)."""
        st = run_passes(PassState(src, params, infos, "primal", config.shape, job, self.seams, self.options),
                        verify_ir=self.verify_ir, passes=AUTODIFF_KERNEL_PASSES)
        path = write_module(f"{st.ir.name}__primal", st.source)
        job.source = str(path)
        for child in job.descendants():
            child.source = str(path)
        from numba import types as nt
        types = [numba_type(i) for i in infos] + ([nt.Array(nt.int32, 1, "C")] if st.nested_tapes else [])
        compiled = self.backend.compile(load_function(path, st.fname), tuple(types), job.config)
        return Plan("primal", compiled, key, job, source_path=str(path),
                    nested_arrays=tuple(nested_arrays(n, st.ir.file) for n in st.ir.nested),
                    ptx=compiled if isinstance(compiled, str) else None, tape_overflow=bool(st.nested_tapes),
                    loop_files={line: file for loops in st.nested_tapes.values() for line, file in loops.items()})

    def _find_winners(self, plan: Plan, infos: list[ArgInfo], config: LaunchConfig) -> list:
        """Run the two passes of atomic max/min: S = final values and V = each contribution's
        value (thread x statement), then W = lowest winning contribution."""
        primal, _ = self._kernel_args(infos, "primal", plan)
        by_name = {i.name: i.value for i in infos}
        threads = math.prod(config.grid) * math.prod(config.block)
        first, scratch = [], []
        for name, statements in plan.extrema:
            initial = by_name[name]
            # through the host: the caller's array may be any of the backend's array types
            # (a numba device array has no .copy()), and these scratch arrays are small
            host = self.backend.to_host(initial)
            s, i = self.backend.asarray(host), self.backend.asarray(host.copy())
            w = self.backend.asarray(np.full(tuple(initial.shape), np.iinfo(np.int64).max, np.int64))
            v = self.backend.asarray(np.full(threads * statements, np.nan, initial.dtype))   # NaN: never made
            first += [s, v]
            scratch += [s, i, w, v]
        self.backend.launch(plan.extremum_passes[0], config.grid, config.block, primal + first)
        self.backend.launch(plan.extremum_passes[1], config.grid, config.block, primal + scratch)
        return scratch

    def _flatten(self, infos: list[ArgInfo], mode: str, plan: Plan):
        """The kernel's arguments in launch order with the engine's scratch buffers (Active
        adjoints, uniform-index slots, the tape-overflow flag), numpy scalars as Python numbers."""
        kernel_args, active_out = self._kernel_args(infos, mode, plan)
        overflow = None
        if plan.tape_overflow:
            overflow = self.backend.zeros(1, np.int32)
            kernel_args.append(overflow)
        return [v.item() if isinstance(v, np.generic) else v for v in kernel_args], active_out, overflow

    def _kernel_args(self, infos: list[ArgInfo], mode: str, plan: Plan):
        out = []
        cast = (lambda v, dt: np.dtype(dt).type(v))
        for i in infos:
            out.append(cast(i.value, i.dtype) if i.kind == "scalar" else i.value)
            if not i.differentiable or mode == "primal":
                continue
            if i.kind == "array":
                out += list(i.shadows)
            elif mode == "forward":
                out += [cast(t, i.dtype) for t in i.shadows]
        active_out = None
        if mode == "reverse" and plan.active_names:
            width = max(i.width for i in infos)
            active_out = self.backend.zeros(len(plan.active_names) * width, np.float64)
            out.append(active_out)
        if mode == "reverse" and plan.uniform_slots:     # zeroed here, left zeroed by the kernel
            out.append(self.backend.zeros(plan.uniform_slots * SPREAD, np.float64))
        return out, active_out


# process-wide: the engine of the module-level `launch` for scripts; sessions build their own (runner.Runner.engine)
_default: Engine | None = None


def default_engine() -> Engine:
    global _default
    if _default is None:
        _default = Engine()
    return _default


def launch(kernel, config: LaunchConfig, *args, mode: str = "primal") -> LaunchResult:
    """Launch `kernel` on the process's backend with split, individually annotated arguments."""
    return default_engine().launch(kernel, config, *args, mode=mode)
