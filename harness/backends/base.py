"""What every backend offers the launcher (the interface lives in harness/core/target.py, which
the engine shares): arrays in, compile, launch, arrays out."""
from harness.core.target import Backend, TargetConfig  # noqa: F401


def with_line_info(compile_fn):
    """Compile with line info (profilers and fault reports map PTX back to source lines); when
    NVVM rejects the line-info metadata, as numba-cuda 0.30's does for some generated kernels with
    tape loops (kernels/soundness.py:row_recurrence), compile again without it. The ptx and cuda
    backends share this, so the compile-only tier meets the same failure as a GPU."""
    try:
        return compile_fn(True)
    except Exception as exc:                  # noqa: BLE001 - only NVVM's rejection is retried
        if "nvvm" not in type(exc).__name__.lower() and "NVVM" not in str(exc):
            raise
        return compile_fn(False)


ASSEMBLER_REJECTIONS = ("ptxas", "PTX_COMPILE")


def unoptimised_if_unassemblable(compile_fn, name: str):
    """Compile optimised (`compile_fn(True)`); when ptxas rejects the optimised PTX, compile again
    at NVVM's -O0 and say so. NVVM 13's loop optimisations can emit a branch to a label they
    deleted (a reverse sweep recomputing a while loop: `Unknown symbol '$L__BB0_58'`), which
    no source change of ours can promise to avoid; the unoptimised kernel computes the same
    values, slower. A second rejection is raised as it is."""
    try:
        return compile_fn(True)
    except Exception as exc:                  # noqa: BLE001 - only the assembler's rejection is retried
        if not any(k in str(exc) for k in ASSEMBLER_REJECTIONS):
            raise
        first = str(exc).splitlines()[0][:300]
    import warnings
    result = compile_fn(False)
    warnings.warn(f"{name}: compiled without NVVM optimisation because ptxas rejected the optimised PTX "
                  f"(an NVVM bug: {first})", stacklevel=2)
    return result



class CompileMemo:
    """One compile per (function, argument types, target configuration) in a process, and a record
    of every request (compile_log.py). The engine caches plans per engine and per launch shape, but
    the same kernel is asked for again by another engine (other options), another launch shape, a
    relation's variant whose generated code came out identical (its docstring, which lists the
    activities, may differ), or a second run of the case in this worker: those get the kernel
    compiled the first time."""

    def __init__(self, served=lambda result, seconds: "compiled"):
        from harness.backends.compile_log import CompileLog
        self.log = CompileLog()
        self._kernels: dict = {}
        self._served = served

    def forget(self) -> None:
        """Drop the kept kernels (a rebuilt device context no longer holds their modules)."""
        self._kernels.clear()

    def get(self, pyfunc, signature, config, compile_fn):
        """The compiled `pyfunc`; `compile_fn(function)` compiles the function it is given."""
        from harness.backends.compile_log import content_key, phase_of_caller, shared_code_key, shared_function
        import time
        key, file_key = content_key(pyfunc, signature, config), content_key(pyfunc, signature, config, by_file=True)
        try:
            # generated functions with the same code share one compile (compile_log.shared_code_key)
            memo_key = (shared_code_key(pyfunc) or pyfunc, None if signature is None else tuple(signature), config)
            hash(memo_key)
        except TypeError:                     # unhashable types: compile every time
            memo_key = None
        phase = phase_of_caller()
        if memo_key is not None and memo_key in self._kernels:
            self.log.add(key, getattr(pyfunc, "__name__", "?"), 0.0, phase, "memo", file_key)
            return self._kernels[memo_key]
        t0 = time.perf_counter()
        result = compile_fn(shared_function(pyfunc))      # the function to compile: compile_log.shared_function
        seconds = time.perf_counter() - t0
        self.log.add(key, getattr(pyfunc, "__name__", "?"), seconds, phase, self._served(result, seconds), file_key)
        if memo_key is not None:
            self._kernels[memo_key] = result
        return result
