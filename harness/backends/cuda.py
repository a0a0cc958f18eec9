"""A real GPU: numba-cuda compiles, cupy owns the memory (`__cuda_array_interface__`)."""
from __future__ import annotations

import numpy as np

from harness.backends.base import Backend, CompileMemo, TargetConfig, unoptimised_if_unassemblable, with_line_info


def _served_from(dispatcher, seconds) -> str:
    """'disk' when numba loaded the kernel from its on-disk cache, else 'compiled'."""
    hits = getattr(dispatcher, "_cache_hits", None)
    return "disk" if hits and sum(hits.values()) else "compiled"


class CudaBackend(Backend):
    name = "cuda"
    negative_strides = False    # numba-cuda's argument packing stops with OverflowError (signature.py)

    def __init__(self):
        import os
        os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")   # small cases are small on purpose
        import cupy
        from numba import cuda
        self.cp, self.cuda = cupy, cuda
        dev = cuda.get_current_device()
        self.cc = tuple(dev.compute_capability)
        self.sm_count = int(dev.MULTIPROCESSOR_COUNT)    # read once: one device per process
        self.compiles = CompileMemo(served=_served_from)

    def config(self, fastmath=False, debug=False) -> TargetConfig:
        return TargetConfig("cuda", self.cc, fastmath, debug)

    def asarray(self, host):
        if host.dtype.fields is not None:     # records (generator states): cupy has no record dtypes,
            return self.cuda.to_device(np.ascontiguousarray(host))   # numba's device arrays keep them
        if host.flags.c_contiguous:
            return self.cp.asarray(host)
        from harness.problems.layouts import device_view            # a view keeps its strides and offset
        return device_view(self, host, {})

    def to_host(self, arr):
        if not isinstance(arr, self.cp.ndarray) and hasattr(arr, "copy_to_host"):   # numba's (asarray)
            return arr.copy_to_host()
        return self.cp.asnumpy(arr)

    def is_array(self, value) -> bool:
        return hasattr(value, "__cuda_array_interface__")

    def compile(self, pyfunc, signature, config):
        return self.compiles.get(pyfunc, signature, config, lambda fn: self._compile(fn, signature, config))

    def _compile(self, pyfunc, signature, config):
        # cache=True: kernels come from real files (generated ones are content-addressed), so a
        # second run of the suite loads every kernel from numba's on-disk cache; the lock makes a
        # worker that needs a kernel another worker is compiling wait and load it (compile_lock.py)
        from harness.backends.compile_lock import compiling
        with compiling(pyfunc):
            # unoptimised also means without link-time optimisation: with LTO (numba-cuda's default
            # where nvJitLink is installed) nvJitLink optimises the whole kernel again at link time
            return unoptimised_if_unassemblable(lambda opt: with_line_info(lambda lineinfo: self.cuda.jit(
                signature, fastmath=config.fastmath, debug=config.debug, opt=opt and not config.debug,
                lto=None if opt else False, lineinfo=lineinfo, cache=True)(pyfunc)), pyfunc.__name__)

    def launch(self, compiled, grid, block, args):
        # numba's dispatcher does not type numpy scalars; the explicit signature casts plain ones
        plain = [a.item() if isinstance(a, np.generic) else a for a in args]
        compiled[grid, block](*plain)

    def prepare_launch(self, compiled, grid, block, args):
        """Pack the kernel's arguments once, as numba's launch does on every call, and keep the
        driver-level launch: a bound launch then costs the driver call, not numba's dispatch
        (about 47 us of host time per launch on an H200's host). Uses numba-cuda internals, so
        anything unexpected falls back to the plain launch."""
        try:
            from numba.cuda._compat import CUDA_CORE_GE_1_0
            from numba.cuda.cudadrv import driver
            from numba.cuda.dispatcher import LaunchConfig as CoreConfig
            from numba.cuda.dispatcher import launch as core_launch
            (kern,) = compiled.overloads.values()
            if kern.debug or kern.cooperative:
                raise NotImplementedError("debug and cooperative kernels take numba's own launch")
            packed, retr = [], []
            for ty, value in zip(kern.argument_types, [a.item() if isinstance(a, np.generic) else a for a in args]):
                kern._prepare_args(ty, value, 0, retr, packed)
            if retr:
                raise NotImplementedError("host arrays need numba's copy-back")
            coop = {"is_cooperative": False} if CUDA_CORE_GE_1_0 else {"cooperative_launch": False}
            config = CoreConfig(grid=tuple(grid), block=tuple(block), shmem_size=0, **coop)
            function = kern._codelibrary.get_cufunc().kernel
            stream = driver._to_core_stream(0)
        except Exception:                     # noqa: BLE001 - the portable path always works
            return super().prepare_launch(compiled, grid, block, args)
        return lambda: core_launch(stream, config, function, *packed)

    def multiprocessors(self) -> int:
        return self.sm_count

    def resident_blocks(self, compiled, block):
        try:                                  # the driver's occupancy calculator, for the compiled kernel
            (kern,) = compiled.overloads.values()
            return int(kern.max_cooperative_grid_blocks(tuple(block)))
        except Exception:                     # noqa: BLE001 - the cap alone still bounds the grid
            return None

    def synchronize(self):
        self.cp.cuda.runtime.deviceSynchronize()

    _FAULTS = ("ILLEGAL_ADDRESS", "IllegalAddress", "LAUNCH_FAILED", "LaunchFailure", "MISALIGNED",
               "Misaligned", "ASSERT", "Assert", "ILLEGAL_INSTRUCTION", "IllegalInstruction", "unspecified launch")
    _fault_seen: str | None = None
    recover_error: str = ""

    def fault_of(self, exc):
        text = f"{type(exc).__name__}: {exc}"
        if any(k in text for k in self._FAULTS):
            self._fault_seen = text       # the context is unusable until it is rebuilt
            if self.recover():
                self._fault_seen = None
                return text + " (device context rebuilt; later runs continue in this process)"
            return text + f" (device context could not be rebuilt: {self.recover_error})"
        return None

    def recover(self) -> bool:
        """Rebuild the device context after a fault, so the process can go on. Every device array
        of the faulting run is dropped; kernels are reloaded into the new context on demand."""
        try:
            self.cp.get_default_memory_pool().free_all_blocks()
            self.cp.get_default_pinned_memory_pool().free_all_blocks()
        except Exception:
            pass
        try:
            device = self.cp.cuda.runtime.getDevice()
            self.cuda.close()                     # numba's handle on the primary context
            reset = getattr(self.cp.cuda.runtime, "deviceReset", None)
            if reset is not None:
                reset()                           # destroys the faulted primary context
            else:                                 # cupy 14 has no deviceReset: ask the driver
                from cuda.bindings import driver
                err, dev = driver.cuDeviceGet(device)
                (err,) = driver.cuDevicePrimaryCtxReset(dev)
                if int(err) != 0:
                    raise RuntimeError(f"cuDevicePrimaryCtxReset failed: {err}")
            self.compiles.forget()
            self.cp.cuda.Device(device).use()
            probe = self.cp.arange(4, dtype=self.cp.float32)
            ok = float(probe.sum()) == 6.0
            self.cuda.get_current_device()        # numba attaches to the new context
            return ok
        except Exception as exc:
            self.recover_error = f"{type(exc).__name__}: {exc}"
            return False

    @property
    def poisoned(self) -> bool:
        return self._fault_seen is not None
