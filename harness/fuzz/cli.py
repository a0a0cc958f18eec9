"""`harness fuzz`: generate kernels, run them on the simulator, report counts and findings."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path


def add_fuzz_parser(subparsers) -> None:
    p = subparsers.add_parser("fuzz", help="differentiate random kernels and save any disagreement as a case",
                              description="Generate kernels from the engine's grammar (seeds SEED .. SEED+COUNT-1), "
                                          "run each in forward and reverse mode on the simulator against "
                                          "finite differences and the dot test, and save every wrong gradient "
                                          "or crash as a case file plus kernel file.")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--count", type=int, default=100, help="number of kernels (default 100)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--findings", default="fuzz-findings", help="folder for findings (default fuzz-findings)")
    p.add_argument("--work", default=None, help="folder for the generated files (default: a temporary folder)")
    p.add_argument("--log", default=None, help="append one JSON line per kernel to this file")
    p.add_argument("--resume", action="store_true",
                   help="skip the seeds that --log already holds (a campaign stopped early, or split over machines)")
    p.add_argument("--summarize", default=None, metavar="LOG", help="print the counts of a --log file, run nothing")
    p.add_argument("--engine", default="bundled", metavar="NAMES",
                   help="engines to fuzz, comma-separated (bundled, warp, taichi; default bundled); with an adapter, "
                        "kernels come from the grammar's adapters profile and each adapter is compared with the "
                        "bundled engine (harness/fuzz/differential.py)")
    p.add_argument("--backend", default=None, choices=("sim", "cuda", "ptx"),
                   help="sim: the simulator and the adapters' CPU device (the default); cuda: the GPU; with "
                        "--syntax: ptx (its default; numba's compile decides which kernels are valid) or sim")
    p.add_argument("--dask", action="store_true",
                   help="run the seeds as Dask distributed tasks on a LocalCluster of -j workers (harness/fuzz/distributed.py)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the seeds on this Dask scheduler's workers (implies --dask), e.g. tcp://host:8786")
    p.add_argument("--triage", default=None, metavar="FINDINGS",
                   help="dedupe, reduce and write reproducers for a findings folder, run nothing else "
                        "(harness/fuzz/findings.py); with --log, its counts go on the campaign page")
    p.add_argument("-o", "--output", default="fuzz-triage", help="folder for --triage (default fuzz-triage)")
    p.add_argument("--triage-sample", type=int, default=1, metavar="N",
                   help="--triage reduces the N smallest findings of each group (default 1)")
    p.add_argument("--triage-minutes", type=float, default=None, metavar="M",
                   help="--triage starts no reduction after M minutes; the groups left are listed unreduced")
    p.add_argument("--show", type=int, default=None, metavar="SEED", help="print one seed's kernel and case, run nothing")
    p.add_argument("--syntax", action="store_true",
                   help="the syntax fuzzer instead (harness/fuzz/syntax.py): kernels in the whole numba.cuda "
                        "dialect, forward and reverse built (not run); any exception but a refusal is a crash")
    p.set_defaults(func=run_fuzz)


def _exit_with_parent(parent: int) -> None:
    """A pool worker ends when the campaign process does (killed, interrupted): a spawned worker is
    not a daemon of the shell, so it would otherwise keep fuzzing, unseen, beside the next campaign."""
    import os
    import threading

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(3)
    threading.Thread(target=watch, name="fuzz-parent-watch", daemon=True).start()


def _worker(args) -> object:
    seeds, work, findings, log, parent, engines, backend = args
    if parent is not None:
        _exit_with_parent(parent)
    if engines != ["bundled"] or backend != "sim":
        from functools import partial

        from harness.fuzz.differential import run_seeds as differential
        run_seeds = partial(differential, engines=engines, backend=backend)
    else:
        from harness.fuzz.campaign import run_seeds
    done = [0]

    def progress(t):
        done[0] += 1
        if done[0] % 50 == 0:
            print(f"  worker seeds {seeds[0]}..: {t.kernels} kernels, {len(t.findings)} findings",
                  file=sys.stderr, flush=True)
    return run_seeds(seeds, Path(work), Path(findings), progress=progress, log=Path(log) if log else None)


def run_fuzz(args) -> int:
    if args.count < 1 or args.jobs < 1:
        print("harness fuzz: --count and --jobs must be >= 1", file=sys.stderr)
        return 2
    if args.syntax:
        if args.backend == "cuda":
            print("harness fuzz: --syntax builds kernels without running them: --backend ptx or sim", file=sys.stderr)
            return 2
        args.backend = args.backend or "ptx"
        from harness.fuzz.syntax import run_syntax_fuzz
        return run_syntax_fuzz(args)
    if args.backend == "ptx":
        print("harness fuzz: a campaign runs its kernels: --backend sim or cuda (ptx is for --syntax)", file=sys.stderr)
        return 2
    args.backend = args.backend or "sim"
    from harness.adapters import parse_engines
    try:
        engines = parse_engines(args.engine)
    except ValueError as exc:
        print(f"harness fuzz: {exc}", file=sys.stderr)
        return 2
    if args.triage:
        from harness.backends import get_backend
        get_backend("sim")
        from harness.fuzz.findings import triage
        records = triage(Path(args.triage), Path(args.output), Path.cwd(), Path(args.log) if args.log else None,
                         sample=args.triage_sample,
                         total_s=args.triage_minutes * 60 if args.triage_minutes is not None else None)
        done = [r for r in records if r["signature"] is not None]
        print(f"{len(done)} distinct findings, {len(records) - len(done)} groups not reduced; "
              f"{Path(args.output) / 'campaign.md'}")
        return 0
    if args.summarize:
        from harness.fuzz.campaign import summarize_log
        print(summarize_log(Path(args.summarize)).summary())
        return 0
    if args.show is not None:
        import yaml
        from harness.fuzz.campaign import case_document
        from harness.fuzz.differential import profile_for
        from harness.fuzz.grammar import generate
        fk = generate(args.show, profile_for(engines))
        print(fk.source)
        print(yaml.safe_dump(case_document(fk, f"fz_{args.show}"), sort_keys=False, default_flow_style=None))
        return 0
    from harness.fuzz.campaign import Tally
    seeds = list(range(args.seed, args.seed + args.count))
    if args.resume:
        if not args.log:
            print("harness fuzz: --resume needs --log", file=sys.stderr)
            return 2
        from harness.fuzz.campaign import logged_seeds
        done = logged_seeds(Path(args.log))
        seeds = [s for s in seeds if s not in done]
        print(f"harness fuzz: resuming, {len(seeds)} of {args.count} seeds left", file=sys.stderr)
        if not seeds:
            return 0
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="harness-fuzz-") as tmp:
        work = Path(args.work) if args.work else Path(tmp)
        jobs = min(args.jobs, len(seeds))
        parent = os.getpid() if jobs > 1 else None
        chunks = [(seeds[k::jobs], str(work), args.findings, args.log, parent, engines, args.backend)
                  for k in range(jobs)]
        total = Tally()
        if args.dask or args.scheduler:
            from harness.fuzz.distributed import TasksNotRun, run_on_dask
            try:
                total = run_on_dask(seeds, work, Path(args.findings), engines, args.backend,
                                    Path(args.log) if args.log else None, workers=args.jobs, scheduler=args.scheduler,
                                    say=lambda s: print(s, file=sys.stderr, flush=True))
            except TasksNotRun as exc:
                print(f"harness fuzz: {exc}" + (f" (what ran is in {args.log})" if args.log else ""), file=sys.stderr)
                return 3
        elif jobs == 1:
            total = _worker(chunks[0])
        else:
            import multiprocessing
            with multiprocessing.get_context("spawn").Pool(jobs) as pool:
                for t in pool.imap_unordered(_worker, chunks):
                    total.merge(t)
    print(total.summary())
    print(f"wall time {time.time() - started:.0f} s; seeds {args.seed}..{args.seed + args.count - 1}")
    return 1 if total.findings else 0
