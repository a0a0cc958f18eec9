"""What the Warp and Taichi adapters share: checking and unpacking the annotated arguments, host
copies in and out, the translation of the kernel into a readable file, and its cache.

An adapter copies every array into its system (contiguous), runs the translated kernel there, and
writes the final primal values and shadows back into the caller's arrays, so the oracles see the
same launch contract as with the bundled engine. Arrays that share memory are refused: the copies
would break the aliasing the kernel sees.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from harness.core.paths import adapter_sources_dir
from harness.engine.runtime.cache import write_module
from harness.core.errors import UnsupportedError
from harness.adapters.base import AdapterPlan, AdapterResult
from harness.adapters.isolation import planted_fault
from harness.adapters.native import native_function, system_of as native_system
from harness.adapters.rng_refusal import refuse_generator_states
from harness.adapters.translate import BOOL, F32, F64, INT, Arr, LaunchInfo, Param, Translator, dtype_code, python_function

MODES = ("primal", "forward", "reverse")


def write_source(system: str, stem: str, text: str) -> Path:
    """A generated module as a real file named by its content (Warp and Taichi read kernel source
    from files; a reader can open it)."""
    return write_module(stem, text, adapter_sources_dir(system))


def import_source(path: Path, system: str):
    spec = importlib.util.spec_from_file_location(f"harness_{system}_generated.{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Arg:
    """One launch argument, unpacked: its activity, host values and the caller's arrays."""

    def __init__(self, info, backend):
        self.name, self.position, self.activity = info.name, info.position, info.activity
        self.kind = info.kind
        self.device_value = info.value
        self.device_shadows = tuple(info.shadows)
        if info.kind == "array":
            self.host = np.ascontiguousarray(backend.to_host(info.value))
            self.type = Arr(dtype_code(self.host.dtype), self.host.ndim)
            self.shadows = [np.ascontiguousarray(backend.to_host(s)) for s in info.shadows]
        else:
            self.host = info.value
            dt = np.dtype(info.dtype)
            self.type = F32 if dt == np.float32 else F64 if np.issubdtype(dt, np.floating) else \
                BOOL if dt == np.bool_ else INT
            self.shadows = list(info.shadows)

    @property
    def differentiable(self) -> bool:
        return self.activity != "const"


def _write_back(dst, host: np.ndarray):
    if isinstance(dst, np.ndarray):
        dst[...] = host.astype(dst.dtype, copy=False)
        return
    import cupy      # the cuda backend's arrays
    dst[...] = cupy.asarray(host.astype(dst.dtype, copy=False))


class Adapter:
    """Base of the adapters: subclasses give `name`, `version`, a `target` and `run`."""
    name = "adapter"
    system = "adapter"

    def __init__(self, backend):
        self.backend = backend
        self._modules: dict[tuple, tuple] = {}

    # ------------------------------------------------------------------ public
    @property
    def version(self) -> str:
        raise NotImplementedError

    def launch(self, kernel, config, *args, mode: str = "primal") -> AdapterResult:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if not self.backend.can_launch:
            raise UnsupportedError(f"the {self.backend.name} tier compiles the bundled engine's kernels only; "
                                   f"{self.name} runs on sim (its CPU device) or cuda")
        from harness.engine.runtime.signature import classify        # the launch contract's activity checks
        native = native_system(kernel)
        if native is not None and native != self.system:
            raise UnsupportedError(f"a native {native} kernel runs on the {native} adapter, not {self.name}")
        fn = native_function(kernel) if native else python_function(kernel)
        planted_fault(fn.__name__)                      # tests of fault isolation only (isolation.py)
        params = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        infos = classify(self.backend, params, tuple(args), mode)
        refuse_generator_states(kernel, infos, self.system)
        unpacked = [Arg(i, self.backend) for i in infos]
        self._refuse(unpacked, mode)
        launch = _launch_info(config)
        if native:                                      # the system's own kernel, run as written
            adjoints = self.run_native(kernel, unpacked, launch, mode)
            path, fname = fn.__code__.co_filename, fn.__name__
        else:
            module, fname, path, translated = self._module(kernel, unpacked, launch)
            why = _alias_shapes(translated, unpacked) or self.refuse_translation(translated, unpacked, mode)
            if why:
                raise UnsupportedError(why)
            adjoints = self.run(module, fname, unpacked, launch, mode)
        for a in unpacked:
            if a.kind != "array":
                continue
            _write_back(a.device_value, a.host)
            for dst, host in zip(a.device_shadows, a.shadows):
                _write_back(dst, host)
        return AdapterResult(adjoints=adjoints, plan=AdapterPlan(mode, str(path), fname))

    # ------------------------------------------------------------------ subclass hooks
    target = None
    store_mask = False      # also generate `<kernel>__stores` (translate.Translator.add_store_mask_kernel)

    def run(self, module, fname: str, args: list[Arg], launch: LaunchInfo, mode: str) -> dict:
        """Run the translated kernel in `mode`; update each Arg's host and shadows in place;
        return the adjoints of Active scalars."""
        raise NotImplementedError

    def refuse_mode(self, args: list[Arg], mode: str) -> str | None:
        return None

    def refuse_translation(self, kernel, args: list[Arg], mode: str) -> str | None:
        """Why `mode` cannot run the translated kernel (a translate.Function) faithfully, or None."""
        return None

    def configure_module(self, module) -> None:
        """Set the system's compile options on a generated module before its first launch."""

    def run_native(self, kernel, args: list[Arg], launch: LaunchInfo, mode: str) -> dict:
        """Run a kernel written in this system's own language (harness/adapters/native.py)."""
        raise UnsupportedError(f"the {self.name} adapter runs no native kernels")

    # ------------------------------------------------------------------ internals
    def _refuse(self, args: list[Arg], mode: str):
        why = self.refuse_mode(args, mode)
        if why:
            raise UnsupportedError(why)
        for a in args:
            if a.activity == "batch_duplicated" and mode != "primal":
                raise UnsupportedError(f"argument {a.position} ('{a.name}'): {self.system} has no batched "
                                       "shadows (BatchDuplicated)")
        arrays = [a for a in args if a.kind == "array"]
        for k, a in enumerate(arrays):
            for b in arrays[k + 1:]:
                if isinstance(a.device_value, np.ndarray) and np.shares_memory(a.device_value, b.device_value):
                    raise UnsupportedError(f"arguments '{a.name}' and '{b.name}' share memory: the {self.name} "
                                           "adapter copies each array into its own buffer")

    def _module(self, kernel, args: list[Arg], launch: LaunchInfo):
        fn = python_function(kernel)
        key = (id(fn), tuple(a.type for a in args), launch)
        if key not in self._modules:
            tr = Translator(self.target, kernel, [Param(a.name, a.type) for a in args], launch)
            if self.store_mask:
                tr.add_store_mask_kernel()
            doc = (f"{self.system} translation of `{tr.src.name}` ({tr.src.file}:{tr.src.tree.lineno}) for "
                   f"{launch.threads} threads in blocks of {launch.block}.\n\n"
                   f"Generated by the harness's {self.name} adapter (harness/adapters/); do not edit.")
            path = write_source(self.system, f"{tr.src.name}", tr.module_text(doc))
            module = import_source(path, self.system)
            self.configure_module(module)
            self._modules[key] = (module, tr.kernel.name, path, tr.kernel)
        return self._modules[key]


def _alias_shapes(kernel, args: list[Arg]) -> str | None:
    """A name standing for one of two arrays reads both (the translation selects between them), so
    the two must have one shape."""
    shapes = {a.name: a.host.shape for a in args if a.kind == "array"}
    for a, b in sorted(kernel.alias_pairs):
        if shapes.get(a) != shapes.get(b):
            return (f"arrays '{a}' {shapes.get(a)} and '{b}' {shapes.get(b)}, one of which a name in the kernel "
                    "stands for, differ in shape (the adapter's translation reads both)")
    return None


def _launch_info(config) -> LaunchInfo:
    ndim = max(len(config.grid), len(config.block))
    grid = tuple(config.grid) + (1,) * (ndim - len(config.grid))
    block = tuple(config.block) + (1,) * (ndim - len(config.block))
    return LaunchInfo(tuple(g * b for g, b in zip(grid, block)), block, grid)
