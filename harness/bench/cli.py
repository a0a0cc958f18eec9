"""`harness bench`: the benchmark table, reports/bench.json and the oracle-scaling measurement."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_bench_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="benchmark generated kernels against hand-written ones, copy bandwidth and JAX (needs a GPU)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--log2n", type=int, default=26, help="elements per array: 2**LOG2N")
    p.add_argument("--repeats", type=int, default=20, help="launches per timed batch (5 batches, median)")
    p.add_argument("--only", default="", help="comma-separated benchmark names (default: all)")
    p.add_argument("--no-jax", action="store_true", help="skip the JAX references")
    p.add_argument("--coarsen-blocks-per-sm", type=int, default=None,
                   help="engine option coarsen_blocks_per_sm for the generated kernels (0: reverse kernels "
                        "reduce per block, uncoarsened; default: the engine's)")
    p.add_argument("--oracle-scaling", default="", metavar="K,K,...",
                   help="also time one axpy case checked through the runner (every oracle and relation, "
                        "forward and reverse) at 2**K elements for each K, split into oracles, relations, "
                        "setup and kernel launches")
    p.add_argument("--oracle-device", default="", metavar="K,K,...",
                   help="also time every gradient oracle on the axpy problem kept on the GPU at 2**K elements")
    p.add_argument("--host", action="store_true",
                   help="no GPU: only the host-side measurements (Engine.launch on a cached plan with stub "
                        "launches, and --oracle-host)")
    p.add_argument("--oracle-host", default="16,20,22,24", metavar="K,K,...",
                   help="with --host: time every gradient oracle on a numpy axpy problem at 2**K elements")
    p.add_argument("--out", default="reports/bench.json", help="results file (the report's --bench input)")
    p.set_defaults(func=main)


def main(args) -> int:
    root = Path.cwd()
    if not (root / "kernels").is_dir():
        raise SystemExit("harness bench: run it from the project root (the folder holding kernels/)")
    if args.host:
        return _host(args, root)
    from harness.backends import get_backend
    from harness.bench.run import oracle_scaling, run_benches, table, write
    from harness.bench.suite import by_name
    try:
        get_backend("cuda")
    except Exception as exc:
        raise SystemExit(f"harness bench needs a CUDA GPU with cupy (or --host): {exc}")
    benches = by_name([n for n in args.only.split(",") if n])
    from harness.engine.runtime.launch import EngineOptions
    options = None if args.coarsen_blocks_per_sm is None else EngineOptions(coarsen_blocks_per_sm=args.coarsen_blocks_per_sm)
    result = run_benches(benches, root, args.log2n, args.repeats, not args.no_jax, options)
    if args.oracle_scaling:
        result["oracle_scaling"] = oracle_scaling(root, _exponents(args.oracle_scaling))
    if args.oracle_device:
        from harness.bench.device_problem import device_oracle_scaling
        result["oracle_device"] = device_oracle_scaling(root, _exponents(args.oracle_device))
    write(result, Path(args.out))
    print(table(result))
    for row in result.get("oracle_scaling", []):
        print(f"axpy case through the runner at 2^{row['log2n']} {row['run']}: {row['seconds']:.2f} s "
              f"({row['state']}) " + json.dumps({**{k: round(v, 2) for k, v in row["timings"].items()},
                                                 "launch_s": round(row.get("launch_s", 0.0), 2)}))
    for row in result.get("oracle_device", []):
        print(f"oracles on the device axpy at 2^{row['log2n']} ({row['mode']}): {row['seconds']:.2f} s "
              + (row.get("error") or json.dumps(row.get("verdicts"))))
    print(f"wrote {args.out}")
    return 0


def _exponents(text: str) -> list[int]:
    try:
        return [int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise SystemExit(f"harness bench: expected comma-separated exponents such as 12,16,20, not {text!r}")


def _host(args, root: Path) -> int:
    """The measurements that need no GPU (docs/gpu.md: measured on the 2-core development host)."""
    from harness.bench.host_launch import host_launch_overhead
    from harness.bench.host_problem import host_oracle_scaling
    from harness.bench.run import write
    result = {"launch_host_us": host_launch_overhead(root),
              "oracle_host": host_oracle_scaling(_exponents(args.oracle_host))}
    write(result, Path(args.out))
    print("host CPU microseconds per call, stub launches (the engine's own work):")
    for k, v in result["launch_host_us"].items():
        print(f"  {k:40} {v:9.1f}")
    for row in result["oracle_host"]:
        print(f"oracles on a numpy axpy at 2^{row['log2n']} ({row['mode']}): {row['seconds']:.2f} s "
              f"({row['cpu_seconds']:.2f} s CPU), "
              f"{row['launches']} problem calls, {row['verdicts']}")
    print(f"wrote {args.out}")
    return 0
