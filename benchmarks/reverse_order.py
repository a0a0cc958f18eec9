"""What the order of a generated reverse kernel costs: its source as generated (costly partials
computed in the forward sweep next to their primal, shadow reads with the block's first loads:
docs/engine.md, "Semantics") against variants that put them back where the engine put them
before (partials in the reverse sweep; shadow reads just before the block's first store), timed
on the same buffers next to the hand-written adjoint. Run from the project root on a GPU:

    python benchmarks/reverse_order.py [log2n] [benchmark ...]      # default: 26 math_heavy

Without a GPU, `--ptx` compiles each variant to PTX and prints its facts instead of timing it.
"""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def partials_in_reverse_sweep(text: str) -> str:
    """Each `_pdN = expr` of the forward sweep deleted and `(_pdN)` in the reverse sweep replaced by
    `(expr)`: the partial is computed where the adjoint uses it."""
    for m in list(re.finditer(r"^ +(_pd\d+) = (.*)\n", text, re.M)):
        text = text.replace(m.group(0), "", 1).replace(f"({m.group(1)})", f"({m.group(2)})")
    return text


def shadow_reads_at_first_store(text: str) -> str:
    """Each block's run of `_pfN = d_x[...]` lines moved down to just before the block's first
    store of a primal array at the same indentation."""
    lines = text.split("\n")
    k = 0
    while k < len(lines):
        m = re.match(r"^( +)_pf\d+ = ", lines[k])
        if not m:
            k += 1
            continue
        indent, end = m.group(1), k
        while end < len(lines) and re.match(rf"^{indent}_pf\d+ = ", lines[end]):
            end += 1
        reads, rest = lines[k:end], lines[:k] + lines[end:]
        store = next((j for j in range(k, len(rest))
                      if re.match(rf"^{indent}\w+\[[^]]*\] = ", rest[j])), None)
        if store is None:
            k = end
            continue
        lines = rest[:store] + reads + rest[store:]
        k = store + len(reads)
    return "\n".join(lines)


def variants(text: str) -> dict[str, str]:
    return {"as generated": text,
            "partials in the reverse sweep": partials_in_reverse_sweep(text),
            "shadow reads at the first store": shadow_reads_at_first_store(text),
            "both (the order before)": shadow_reads_at_first_store(partials_in_reverse_sweep(text))}


def load(src: str, fname: str, tmp: Path, label: str):
    path = tmp / (re.sub(r"\W+", "_", label) + ".py")
    path.write_text(src)
    ns: dict = {}
    exec(compile(src, str(path), "exec"), ns)
    return ns[fname]


def check_ptx(names: list[str]) -> None:
    """No GPU: each variant's PTX facts (late_loads, trig_reductions, instructions)."""
    import numpy as np
    from numba import cuda

    from harness.backends.ptx import PtxBackend, ptx_facts
    from harness.bench.suite import by_name
    from harness.engine.runtime.launch import Engine, LaunchConfig
    from harness.cases.inputs import load_kernel
    engine, tmp = Engine(PtxBackend()), Path(tempfile.mkdtemp())
    for b in by_name(names):
        plan, _ = engine.prepare(load_kernel(b.kernel, ROOT), LaunchConfig.threads(1024, b.block),
                                 b.wrapped(b.values(np, 1024), "reverse"), "reverse")
        text = Path(plan.source_path).read_text()
        fname = re.search(r"^def (\w+__reverse)\(", text, re.M).group(1)
        print(f"{b.name}:")
        for label, src in variants(text).items():
            ptx, _ = cuda.compile_ptx(load(src, fname, tmp, label), plan.signature, cc=(9, 0))
            f = ptx_facts(ptx)
            print(f"    {label:34s} late_loads {f['late_loads']}  trig_reductions {f['trig_reductions']}  "
                  f"instructions {f['instructions']}")


def main(log2n: int, names: list[str]) -> None:
    import cupy as cp
    from numba import cuda

    from harness.backends import get_backend
    from harness.bench.suite import by_name, hand_launcher
    from harness.bench.timing import event_time
    from harness.engine.emission import coarsen
    from harness.engine.runtime.launch import Engine, LaunchConfig
    from harness.cases.inputs import load_kernel
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from stage_costs import regs
    engine, tmp, n = Engine(get_backend("cuda")), Path(tempfile.mkdtemp()), 1 << log2n
    for b in by_name(names):
        config = LaunchConfig.threads(n, b.block)
        bound = engine.bind(load_kernel(b.kernel, ROOT), config, *b.wrapped(b.values(cp, n), "reverse"), mode="reverse")
        print(f"{b.name}: engine {event_time(bound.launch) * 1e3:.3f} ms ({regs(bound.plan.compiled)} registers)")
        for label, fname in b.hand.get("reverse", {}).items():
            hand = hand_launcher(fname, config, bound.grid)
            print(f"    {label:34s} {event_time(lambda: hand(bound.kernel_args)) * 1e3:.3f} ms")
        text = Path(bound.plan.source_path).read_text()
        fname = re.search(r"^def (\w+__reverse)\(", text, re.M).group(1)
        args = list(bound.kernel_args) + (coarsen.grid_args(config.grid) if bound.plan.coarsen else [])
        for label, src in variants(text).items():
            k = cuda.jit(load(src, fname, tmp, label))
            t = event_time(lambda: k[bound.grid, config.block](*args))
            print(f"    {label:34s} {t * 1e3:.3f} ms  {regs(k)} registers")
        cp.cuda.runtime.deviceSynchronize()


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv and argv[0] == "--ptx":
        check_ptx(argv[1:] or ["math_heavy"])
    else:
        main(int(argv[0]) if argv else 26, argv[1:] or ["math_heavy"])
