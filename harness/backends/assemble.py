"""Assemble PTX to machine code for the ptx tier, without a GPU or a driver.

NVVM's PTX is not the end of a kernel's compile: on a GPU the driver (through nvJitLink) runs
ptxas on it, and ptxas rejects some PTX that NVVM emits (a branch to a label the PTX never
defines, seen on a generated reverse kernel). nvJitLink ships as a library with numba-cuda's CUDA
wheels and needs no device, so the ptx tier runs the same assembler and such a kernel fails here,
on any machine, as it would on the GPU.
"""
from __future__ import annotations

from functools import lru_cache


class AssemblyError(RuntimeError):
    """ptxas (through nvJitLink) rejected a kernel's PTX."""


@lru_cache(maxsize=1)        # whether the library is there does not change within a process
def assembler_available() -> bool:
    try:
        from cuda.bindings import nvjitlink  # noqa: F401
    except ImportError:
        return False
    return True


def assemble(ptx: str, cc: tuple[int, int], name: str) -> None:
    """Run ptxas on `ptx` for sm_{cc}; raise AssemblyError with ptxas's log if it rejects it."""
    from cuda.bindings import nvjitlink
    data = ptx.encode()
    handle = nvjitlink.create(1, [f"-arch=sm_{cc[0]}{cc[1]}"])
    try:
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), f"{name}.ptx")
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            size = nvjitlink.get_error_log_size(handle)
            log = bytearray(size)
            nvjitlink.get_error_log(handle, log)
            text = log.decode(errors="replace").strip()
            if _only_unresolved_symbols(text):
                return     # assembled; the GPU's link adds the device runtime (cudadevrt) that defines them
            raise AssemblyError(f"ptxas rejected the PTX of {name} for sm_{cc[0]}{cc[1]} ({exc}): {text}") from None
    finally:
        nvjitlink.destroy(handle)


def _only_unresolved_symbols(log: str) -> bool:
    """True when every error of the log is an undefined reference: ptxas accepted the PTX and only
    the final link is incomplete (cooperative groups call into cudadevrt, which a GPU's link
    supplies and this check does not)."""
    errors = [line for line in log.splitlines() if line.lstrip().startswith("error")]
    return bool(errors) and all("Undefined reference" in line for line in errors)
