"""Where a generated reverse kernel spends its time, without hardware counters: time variants of
its source that leave one stage out (a racy or dead-ended variant computes nonsense; only its time
is read), on a GPU, next to the Const twin. Run from the project root:

    python benchmarks/stage_costs.py [log2n]

It prints, per benchmark, milliseconds per launch of each variant (CUDA events, median of batches).
"""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def variants(text: str) -> dict[str, str]:
    """name -> kernel source; each cuts one stage of the end-of-kernel reduction."""
    head, sep, tail = text.partition("    # uniform-index reads")
    out = {"as generated": text}
    if not sep:
        return out
    body, _, finish = tail.partition("\n\ndef ")
    finish = "\n\ndef " + finish if finish else ""
    accs = sorted(set(re.findall(r"_acc\d+_\d+", head)))
    keep = " + ".join(accs) if accs else "0.0"
    live = (f"    _z = {keep}\n    if _z == 1234.5:\n        d_uniform_spread[0] = _z\n")
    out["no reduction"] = head + live + finish
    out["no atomics"] = re.sub(r"cuda\.atomic\.add\(d_uniform_spread, (.*), (\w+)\)$", r"d_uniform_spread[\1] = \2",
                               text, flags=re.M)
    out["no barrier (racy)"] = text.replace("    cuda.syncthreads()\n", "", 1)
    block = tail.split("    cuda.syncthreads()\n", 1)[0]
    out["warp stage only"] = (head + "    # uniform-index reads" + block +
                              "    if _v0 == 1234.5:\n        d_uniform_spread[0] = _v0\n" + finish)
    per_warp = re.sub(r"_red\[(\d+) \+ cuda\.laneid // (\d+), _tlin // 32\] = (\w+)",
                      r"cuda.atomic.add(d_uniform_spread, (\1 + cuda.laneid // \2) * 64 + (_blin * 8 + _tlin // 32) % 64, \3)",
                      block)
    out["atomic per warp"] = head + "    # uniform-index reads" + per_warp + finish
    out["no modulo"] = re.sub(r" if _full else (\d+) % _nthreads\)", r" if _full else \1)", text)
    scratch = re.sub(r"_red\[(\d+) \+ cuda\.laneid // (\d+), _tlin // 32\] = (\w+)",
                     r"d_uniform_spread[(_blin * 8 + _tlin // 32) * 4 + \1 + cuda.laneid // \2] = \3", block)
    out["store per warp (scratch)"] = head + "    # uniform-index reads" + scratch + finish
    wide = per_warp.replace(") * 64 + (_blin * 8 + _tlin // 32) % 64,", f") * {WIDE} + (_blin * 8 + _tlin // 32) % {WIDE},")
    out["atomic per warp, wide"] = head + "    # uniform-index reads" + wide + finish
    return out


WIDE = 4096     # copies per slot in the wide per-warp variant (its scratch is allocated here)


def regs(dispatcher) -> str:
    """Registers per thread of a compiled kernel (they bound how many warps an SM keeps in flight)."""
    try:
        return str(max(dispatcher.get_regs_per_thread().values()))
    except Exception as exc:            # the count is a diagnostic, never the point of the run
        return f"? ({type(exc).__name__})"


def main(log2n: int = 26):
    import cupy as cp
    import numpy as np
    from numba import cuda

    from harness.backends import get_backend
    from harness.bench.suite import by_name
    from harness.bench.timing import event_time
    from harness.engine.emission import coarsen
    from harness.engine.runtime.launch import Engine, LaunchConfig
    from harness.cases.inputs import load_kernel

    engine = Engine(get_backend("cuda"))
    n = 1 << log2n
    tmp = Path(tempfile.mkdtemp())
    for name in ("horner_c_const", "horner_c_duplicated", "conv3_w_const", "conv3_w_duplicated", "math_heavy",
                 "active_scalar"):
        (b,) = by_name([name])
        kernel = load_kernel(b.kernel, ROOT)
        values = b.values(cp, n)
        config = LaunchConfig.threads(n, b.block)
        bound = engine.bind(kernel, config, *b.wrapped(values, "reverse"), mode="reverse")
        print(f"{name}: engine {event_time(bound.launch) * 1e3:.3f} ms ({regs(bound.plan.compiled)} registers)")
        text = Path(bound.plan.source_path).read_text()
        fname = re.search(r"^def (\w+__reverse)\(", text, re.M).group(1)
        for label, src in variants(text).items():
            path = tmp / f"{name}_{len(label)}_{abs(hash(label))}.py"
            path.write_text(src)
            ns = {}
            exec(compile(src, str(path), "exec"), ns)
            k = cuda.jit(ns[fname])
            runs = [(label, k)]
            if label == "as generated":         # the same kernel held to 32 registers (full occupancy)
                runs.append(("at most 32 registers", cuda.jit(max_registers=32)(ns[fname])))
            args = list(bound.kernel_args)
            if label.endswith("wide"):
                args[-1] = cp.zeros(64 * WIDE, np.float64)
            if label.endswith("(scratch)"):
                args[-1] = cp.zeros(4 * n // 32 + 64, np.float64)
            if bound.plan.coarsen:              # the real grid's dimensions (harness/engine/emission/coarsen.py)
                args += coarsen.grid_args(config.grid)
            for label, k in runs:
                try:
                    t = event_time(lambda: k[bound.grid, config.block](*args))
                    print(f"    {label:22s} {t * 1e3:.3f} ms  {regs(k)} registers")
                except Exception as exc:
                    print(f"    {label:22s} failed: {type(exc).__name__}: {str(exc)[:200]}")
        cp.cuda.runtime.deviceSynchronize()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 26)
