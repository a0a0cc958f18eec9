"""Instruction statistics of the `harness bench` kernels, without a GPU: each benchmark's generated
forward and reverse kernel and its hand-written ones (harness/bench/reference.py), compiled to PTX
for sm_90 (NVVM runs without a driver), counted by class, and, when a `ptxas` is on PATH,
assembled for the register count. Run from the project root:

    python benchmarks/ptx_stats.py [--only math_heavy,axpy] [--dump DIR]

Columns: PTX instructions; float64 arithmetic; float32 <-> float64 conversions; divisions and
reciprocals; calls (libdevice's out-of-line paths, e.g. a float64 pow); argument reductions of
sin/cos (`trig_reductions`); loads of the kernel's arrays after its first floating-point
arithmetic (`late_loads`); per-thread local memory in bytes (`local_bytes`: the tape of a dynamic
loop) and the local loads and stores that use it (`local_ld_st`); atomics; warp shuffles; barriers; registers. `--dump DIR` writes each kernel's PTX there.

ptxas older than the NVVM that wrote the PTX refuses its `.version`; the PTX is assembled with
the version lowered to ptxas's own, which is fine for these kernels (no newer instructions).
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N = 1024


def counts(ptx: str) -> dict:
    from harness.backends.ptx import ptx_facts
    facts = ptx_facts(ptx)
    ops = [re.sub(r"^@!?%p\d+\s+", "", ln.strip()) for ln in ptx.splitlines()]
    return {"instructions": facts["instructions"],
            "f64_arith": sum(1 for ln in ops if re.match(r"(add|sub|mul|fma|div|rcp|sqrt|neg|abs|min|max)\S*\.f64\b", ln)),
            "cvt_f32_f64": sum(1 for ln in ops if re.match(r"cvt(\.\w+)*\.(f32\.f64|f64\.f32)\b", ln)),
            "div_rcp": sum(1 for ln in ops if re.match(r"(div|rcp)\.", ln)),
            "calls": facts["calls"], "trig_reductions": facts["trig_reductions"], "late_loads": facts["late_loads"],
            "local_bytes": facts["local_memory"],
            "local_ld_st": sum(1 for ln in ops if re.match(r"(ld|st)\.local\b", ln)),
            "atomics": facts["atomics"], "shuffles": facts["shuffles"], "barriers": facts["barriers"],
            "registers": registers(ptx)}


def registers(ptx: str) -> int | None:
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        for version in (None, "8.0", "9.0"):
            src.write_text(ptx if version is None else re.sub(r"^\.version \S+", f".version {version}", ptx, flags=re.M))
            run = subprocess.run([ptxas, "-arch=sm_90", "-v", str(src), "-o", str(Path(tmp) / "k.cubin")],
                                 capture_output=True, text=True)
            found = re.findall(r"Used (\d+) registers", run.stderr)
            if run.returncode == 0 and found:
                return max(int(r) for r in found)
    return None


def kernels(only: list[str] | None):
    """(benchmark, mode, label, PTX) for each generated and hand-written kernel."""
    import numpy as np
    from numba import cuda

    from harness.backends.ptx import PtxBackend
    from harness.bench import reference
    from harness.bench.suite import by_name
    import dataclasses

    from harness.engine.runtime.launch import Engine
    from harness.cases.inputs import load_kernel
    engine = Engine(PtxBackend())
    for b in by_name(only):
        kernel = load_kernel(b.kernel, ROOT)
        values = b.values(np, N)
        # the bench's own launch geometry (2-D tiles for the matrix product) and tape size: the
        # engine's ownership decisions, hence the code, depend on the launch's shape
        config = b.config(N)
        tape = b.tape_size(N, engine.options.tape_size)
        engine_for_b = engine if tape == engine.options.tape_size else \
            Engine(PtxBackend(), dataclasses.replace(engine.options, tape_size=tape))
        for mode in ("forward", "reverse"):
            plan, _ = engine_for_b.prepare(kernel, config, b.wrapped(values, mode), mode)
            yield b.name, mode, "generated", plan.ptx
            for label, fnames in b.hand.get(mode, {}).items():
                # a hand-written adjoint in several kernels (the matrix product's dA, dB and primal)
                # gives one row per kernel; each takes the leading arguments of the generated
                # kernel's signature (the generated reverse adds its tape-overflow flag at the end)
                names = [fnames] if isinstance(fnames, str) else list(fnames)
                for fname in names:
                    fn = getattr(reference, fname)
                    arity = fn.__code__.co_argcount
                    signature = tuple(plan.signature)[:arity]
                    ptx, _ = cuda.compile_ptx(fn, signature, cc=(9, 0))
                    yield b.name, mode, label if len(names) == 1 else f"{label}:{fname}", ptx


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated benchmark names (default: all)")
    ap.add_argument("--dump", type=Path, help="write each kernel's PTX into this folder")
    args = ap.parse_args(argv)
    only = args.only.split(",") if args.only else None
    columns = ("instructions", "f64_arith", "cvt_f32_f64", "div_rcp", "calls", "trig_reductions", "late_loads",
               "local_bytes", "local_ld_st", "atomics", "shuffles", "barriers", "registers")
    print(f"{'benchmark':16s} {'mode':8s} {'kernel':36s} " + " ".join(f"{c:>12s}" for c in columns))
    for name, mode, label, ptx in kernels(only):
        if args.dump:
            args.dump.mkdir(parents=True, exist_ok=True)
            (args.dump / f"{name}__{mode}__{label}.ptx").write_text(ptx)
        row = counts(ptx)
        print(f"{name:16s} {mode:8s} {label:36s} " + " ".join(f"{str(row[c]):>12s}" for c in columns), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
