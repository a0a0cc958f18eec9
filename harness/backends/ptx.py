"""Compile-only: every kernel goes through NVVM to PTX for sm_90, and ptxas assembles it where
nvJitLink is installed (assemble.py); nothing is launched.

numba-cuda's NVVM wheels work without a GPU or driver, so this tier runs anywhere. It cannot share
a process with the simulator, which replaces `numba.cuda`.
"""
from __future__ import annotations

import re

import numpy as np

from harness.backends.assemble import assemble, assembler_available
from harness.backends.base import Backend, CompileMemo, TargetConfig, unoptimised_if_unassemblable, with_line_info

CC = (9, 0)


class PtxBackend(Backend):
    name = "ptx"
    can_launch = False

    def __init__(self):
        from numba import cuda
        self.cuda = cuda
        self.compiles = CompileMemo()
        _compile_device_functions_without_a_driver()
        _compile_eager_signatures_without_a_driver()

    def config(self, fastmath=False, debug=False) -> TargetConfig:
        return TargetConfig("cuda", CC, fastmath, debug)

    def asarray(self, host):
        return host

    def to_host(self, arr):
        return np.array(arr, copy=True)

    def is_array(self, value) -> bool:
        return isinstance(value, np.ndarray)

    def compile(self, pyfunc, signature, config):
        return self.compiles.get(pyfunc, signature, config, lambda fn: self._compile(fn, signature, config))

    def _compile(self, pyfunc, signature, config):
        def at(opt: bool) -> str:
            ptx, _ = with_line_info(lambda lineinfo: self.cuda.compile_ptx(
                pyfunc, signature, cc=config.compute_capability, fastmath=config.fastmath, debug=config.debug,
                opt=opt and not config.debug, lineinfo=lineinfo))
            if assembler_available():         # as the driver would on a GPU
                assemble(ptx, config.compute_capability, pyfunc.__name__)
            return ptx
        return unoptimised_if_unassemblable(at, pyfunc.__name__)

    def launch(self, compiled, grid, block, args):
        raise RuntimeError("the ptx backend compiles only; it cannot launch kernels")


class _CompileOnlyDevice:
    compute_capability = CC


def _compile_device_functions_without_a_driver() -> None:
    """numba compiles a kernel's device functions for the *current device's* compute capability,
    which needs a driver. With none present (this tier's purpose), answer with the tier's own
    target so that kernels calling device functions compile to PTX like any other."""
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda.cudadrv.error import CudaSupportError
    real = dispatcher.get_current_device
    if getattr(real, "_harness_compile_only", False):
        return

    def current_device_or_target():
        try:
            return real()
        except CudaSupportError:
            return _CompileOnlyDevice()
    current_device_or_target._harness_compile_only = True
    dispatcher.get_current_device = current_device_or_target


def _compile_eager_signatures_without_a_driver() -> None:
    """A kernel published with an eager signature (`@cuda.jit("(f8[:], f8[:])")`) is compiled when
    its module is imported: numba generates its PTX for the current device's compute capability
    and binds it to a CUDA context, both of which need a driver. With none present, generate for
    this tier's target and leave the kernel unbound (this tier launches nothing), so such a module
    imports as published; the tier compiles the kernel's Python function itself, as for any other."""
    import numba.cuda.codegen as codegen
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda.cudadrv.error import CudaSupportError
    ensure_cc, bind = codegen.CUDACodeLibrary._ensure_cc, dispatcher._Kernel.bind
    if getattr(ensure_cc, "_harness_compile_only", False):
        return

    def ensure_cc_or_target(self, cc):
        try:
            return ensure_cc(self, cc)
        except CudaSupportError:
            return (*CC, "a" if CC >= (9, 0) else "")

    def bind_where_a_driver_is(self):
        try:
            return bind(self)
        except CudaSupportError:
            return None
    ensure_cc_or_target._harness_compile_only = True
    codegen.CUDACodeLibrary._ensure_cc = ensure_cc_or_target
    dispatcher._Kernel.bind = bind_where_a_driver_is


def ptx_facts(ptx: str) -> dict:
    """Countable facts about a kernel's PTX, for `ptx:` assertions in cases."""
    body = [ln.strip() for ln in ptx.splitlines()]
    instr = [ln for ln in body if ln and not ln.startswith(("//", ".", "{", "}", "$"))]
    local_decls = re.findall(r"\.local\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\]", ptx)
    ops = [re.sub(r"^@!?%p\d+\s+", "", ln) for ln in instr]      # without a guarding predicate
    arith = [k for k, ln in enumerate(ops) if _FLOAT_ARITHMETIC.match(ln)]
    return {
        "atomics": sum(1 for ln in instr if ln.startswith(("atom.", "red."))),
        "local_memory": sum(int(n) for n in local_decls),
        "fp64": sum(1 for ln in instr if re.search(r"\.f64\b", ln) and not ln.startswith(("ld.", "st.", "mov."))),
        "shared_memory": sum(int(n) for n in re.findall(r"\.shared\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\]", ptx)),
        "barriers": sum(1 for ln in instr if ln.startswith(("bar.", "barrier."))),
        "shuffles": sum(1 for ln in instr if ln.startswith("shfl.")),
        "instructions": len(instr),
        "calls": sum(1 for ln in instr if ln.startswith("call")),
        # loads of the kernel's arrays issued after the first floating-point arithmetic: a thread
        # that reads a value only after computing for a while waits for memory in the middle of
        # its work (read-only `.nc` loads are libdevice's coefficient tables)
        "late_loads": sum(1 for ln in ops[arith[0]:] if ln.startswith("ld.global") and not ln.startswith("ld.global.nc"))
        if arith else 0,
        # argument reductions of sin/cos/tan (the quadrant, rounded to an integer): sin(x) and
        # cos(x) computed side by side share one
        "trig_reductions": sum(1 for ln in ops if ln.startswith(("cvt.rni.s32.f32", "cvt.rni.s32.f64"))),
    }


_FLOAT_ARITHMETIC = re.compile(r"(fma|mul|add|sub|div|rcp|sqrt|ex2|lg2|sin|cos)\.\S*f(32|64)\b")
