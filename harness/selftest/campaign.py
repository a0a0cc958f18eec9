"""The mutation campaign: run the case suite under every planted bug and show what catches each.

    harness mutate --backend sim                     # every mutant, every case, 2 processes at a time
    harness mutate --mutants drop-atomic,stale-tape cases/loop-*.yaml   # case files or globs last
    harness mutate --dask -j 8 --log reports/mutations.log.jsonl     # each mutant a Dask task
    harness mutate --scheduler tcp://host:8786 --log L --resume      # on a cluster; skip logged mutants
    python -m harness.selftest.campaign --list            # the registry (harness/selftest/mutants.py)

Each mutant, and the unmutated baseline, runs in a fresh subprocess: the backend must be chosen
before numba is imported, and engines cache plans per process. Every run's state and failing
oracles are compared with the baseline's; a run *catches* a mutant when it moves from a passing
state (PASS, XFAIL, UNSUPPORTED, SKIP) to a failing one (FAIL, ZERO, NONDET, ERROR, XPASS); an
expected error no longer raised is a FAIL by the case's own judgement. On the simulator every
process (baseline included) runs with interleaved threads (harness.selftest.mutants.interleaved_threads),
so lost updates show up as they do on a GPU.

With `--dask` (a LocalCluster of `-j` single-threaded workers) or `--scheduler ADDRESS` (an existing
cluster, whose workers see the project at the same path), each mutant's process is started by a
Dask task, through the fuzz campaigns' runner (harness/fuzz/distributed.py): a worker that dies is
retried, then the mutant is recorded as `worker_died`, never lost. Each mutant's result is
appended to `--log` as it arrives; `--resume` takes the mutants already there (not those recorded
as `worker_died`) from the log instead of running them again, so a campaign stopped on one
machine finishes on another.

Writes reports/mutations.json (every run of every mutant) and reports/mutations.md (the table);
`--docs docs/mutations.md` also replaces the table there. Exit status 0 when every mutant is
caught, 1 when one survives (or a process failed), 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from harness.policy import PASSING, State, catches

BASELINE = "baseline"
DOCS_BEGIN = "<!-- mutation-table:begin -->"
DOCS_END = "<!-- mutation-table:end -->"
DEFAULT_TIMEOUT_S = 1800


# ----------------------------------------------------------------------------- judging

def caught(base_state: str, mutant_state: str) -> bool:
    """A run catches a mutant when the mutant moves it from a passing state to a failing one."""
    return catches(base_state, mutant_state)


def catching_oracles(record: dict) -> list[str]:
    """What caught it: the failing oracles, else the error, else the case's expectation."""
    if record.get("failed"):
        return list(record["failed"])
    state, expect = record["state"], record.get("expect")
    if state in ("TIMEOUT", "CRASH"):
        return [state.lower()]
    if state == State.XPASS:
        return ["xfail-now-passes"]
    if record.get("error"):
        kind = "error" if expect == "pass" else f"expect-{expect}"
        return [f"{kind}:{record['error']}"]
    if expect in ("error", "unsupported"):
        return [f"expect-{expect}:not-raised"]
    return [state.lower()]


def source_changed(base: dict, mutant: dict) -> bool | None:
    """Whether a generated kernel differs (content-hashed file names); None when not comparable."""
    shared = set(base.get("sources") or {}) & set(mutant.get("sources") or {})
    if not shared:
        return None
    return any(Path(base["sources"][m]).name != Path(mutant["sources"][m]).name for m in shared)


# ----------------------------------------------------------------------------- the worker

def _record(run, outcome) -> dict:
    failed = sorted({v.name for v in outcome.oracles if v.verdict == "fail"})
    return {"run_id": run.run_id, "case_id": outcome.case_id, "mode": run.mode, "state": outcome.state,
            "expect": outcome.expect, "failed": failed,
            "error": outcome.error.type if outcome.error else None,
            "message": (outcome.message or "")[:400], "sources": dict(outcome.sources),
            "duration": round(outcome.duration, 3)}


def collect_runs(case_files: list[Path], root: Path, backend: str):
    from harness.cases import expand_runs, load_case_file
    runs = []
    for path in case_files:
        for case in load_case_file(path, root):
            runs.extend(expand_runs(case, backend))
    return runs


def worker(name: str, backend: str, case_files: list[str], out: Path, root: Path, interval: float) -> int:
    """Run every case under one mutant (or none), one JSON line per run, flushed as it goes."""
    from harness.backends import get_backend
    get_backend(backend)                      # first: the simulator is chosen before numba loads
    import contextlib
    from harness.selftest.mutants import get_mutant, interleaved_threads
    from harness.execution.runner import Runner
    runs = collect_runs([root / f for f in case_files], root, backend)
    seams = None if name == BASELINE else get_mutant(name).seams()
    threads = interleaved_threads(interval) if backend == "sim" and interval > 0 else contextlib.nullcontext()
    with open(out, "w") as f, threads:
        runner = Runner(root, backend, seams=seams)    # its engines are built with the mutant's seams
        for run in runs:
            f.write(json.dumps({"event": "start", "run_id": run.run_id}) + "\n")
            f.flush()
            f.write(json.dumps(_record(run, runner.execute(run))) + "\n")
            f.flush()
    return 0


def _read_worker(path: Path) -> tuple[dict[str, dict], str | None]:
    """Finished runs by id, and the run in flight when the process stopped (if any)."""
    records, started = {}, None
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue                     # a torn last line
            if rec.get("event") == "start":
                started = rec["run_id"]
            else:
                records[rec["run_id"]] = rec
                started = None
    return records, started


# ----------------------------------------------------------------------------- the campaign

def mutant_task(name: str, args, case_files: list[str], env: dict) -> dict:
    """One mutant's process, run from a Dask worker (in a scratch folder of its own)."""
    from harness.fuzz.distributed import KILL_ENV
    if name in os.environ.get(KILL_ENV, "").split(","):
        os._exit(9)                               # a planted worker death (tests only)
    with tempfile.TemporaryDirectory(prefix="harness-mutant-") as tmp:
        return _spawn(name, args, case_files, Path(tmp), env)


def died(name: str, exc: BaseException) -> dict:
    """The result of a mutant whose Dask task never finished (its worker died, or the task raised)."""
    from harness.fuzz.distributed import worker_died
    return {"name": name, "status": "worker_died" if worker_died(exc) else "error", "wall_s": 0.0, "records": {},
            "stderr": f"{type(exc).__name__}: {str(exc)[:300]}"}


def logged_mutants(log: Path) -> dict[str, dict]:
    """The finished mutants of a campaign's log (a mutant recorded as worker_died is run again)."""
    done = {}
    if log.exists():
        for line in log.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue                     # a torn last line
            if rec.get("status") != "worker_died":
                done[rec["name"]] = rec
    return done


def run_mutants(names: list[str], args, files: list[str], env: dict, log: Path | None) -> dict[str, dict]:
    """Every named process's result, streamed into `log` as it arrives; on Dask or in local threads."""
    results = logged_mutants(log) if getattr(args, "resume", False) and log is not None else {}
    results = {n: r for n, r in results.items() if n in names}
    if results:
        print(f"  resuming: {len(results)} of {len(names)} processes taken from {log}", flush=True)

    def record(name, result):
        results[name] = result
        print(f"  {name:28s} {len(result['records']):4d} runs  {result['wall_s']:6.1f} s  {result['status']}", flush=True)
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a") as f:
                f.write(json.dumps(result) + "\n")

    todo = [n for n in names if n not in results]
    spawn_args = argparse.Namespace(backend=args.backend, root=args.root, switch_interval=args.switch_interval,
                                    timeout=args.timeout)
    if getattr(args, "dask", False) or getattr(args, "scheduler", None):
        from harness.fuzz.distributed import TasksNotRun, run_tasks
        tasks = [(n, f"harness-mutant-{n}", mutant_task, (n, spawn_args, files, env)) for n in todo]
        try:
            run_tasks(tasks, record, died, workers=args.jobs, scheduler=args.scheduler, gpu=args.backend == "cuda",
                      what="mutants", progress_every=10)
        except TasksNotRun as exc:
            raise SystemExit(f"harness mutate: {exc}" + (f" (what ran is in {log})" if log is not None else ""))
    else:
        with tempfile.TemporaryDirectory(prefix="harness-mutants-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(_spawn, n, spawn_args, files, Path(tmp), env): n for n in todo}
            for fut in as_completed(futures):
                record(futures[fut], fut.result())
    return results


def _spawn(name: str, args, case_files: list[str], workdir: Path, env: dict) -> dict:
    out = workdir / f"{name}.jsonl"
    cmd = [sys.executable, "-m", "harness.selftest.campaign", "--worker", name, "--backend", args.backend,
           "--root", str(args.root), "--out", str(out), "--switch-interval", str(args.switch_interval),
           "--", *case_files]
    t0 = time.time()
    status, tail = "ok", ""
    try:
        proc = subprocess.run(cmd, env=env, cwd=args.root, capture_output=True, text=True, timeout=args.timeout)
        if proc.returncode != 0:
            status, tail = "crash", (proc.stderr or proc.stdout)[-2000:]
    except subprocess.TimeoutExpired:
        status = "timeout"
    records, in_flight = _read_worker(out)
    if in_flight is not None:
        records[in_flight] = {"run_id": in_flight, "case_id": in_flight.split("::")[0], "state":
                              "TIMEOUT" if status == "timeout" else "CRASH", "failed": [], "error": None,
                              "message": tail[-400:], "sources": {}}
    wall = time.time() - t0
    return {"name": name, "status": status, "wall_s": round(wall, 1), "records": records, "stderr": tail}


def summarize(baseline: dict[str, dict], mutant_records: dict[str, dict]) -> dict:
    """For one mutant: the catching runs with their oracles, grouped by case."""
    hits = []
    for run_id, base in baseline.items():
        rec = mutant_records.get(run_id)
        if rec is None or not caught(base["state"], rec["state"]):
            continue
        hits.append({"run_id": run_id, "case_id": rec.get("case_id") or base["case_id"],
                     "from": base["state"], "to": rec["state"], "oracles": catching_oracles(rec),
                     "source_changed": source_changed(base, rec),
                     "baseline_source": next(iter((base.get("sources") or {}).values()), None),
                     "mutant_source": next(iter((rec.get("sources") or {}).values()), None),
                     "message": rec.get("message", "")[:300]})
    cases = list(dict.fromkeys(h["case_id"] for h in hits))
    oracles = collections.Counter(o for h in hits for o in h["oracles"])
    return {"caught": bool(hits), "runs": len(hits), "cases": cases, "oracles": dict(oracles.most_common()),
            "hits": hits}


def _cases_probe_first(s: dict, probe: str | None) -> list[str]:
    """The catching cases, the mutant's own probe case (its most targeted catcher) first."""
    lead = [h["case_id"] for h in s["hits"] if h["run_id"] == probe]
    return list(dict.fromkeys(lead + list(s["cases"])))


def markdown_table(summary: dict, registry, first: int = 4) -> str:
    plants = {m.name: m.plants for m in registry}
    probes = {m.name: m.probe for m in registry}
    lines = ["| mutant | what it plants | caught by (case ids, first few) | oracle(s) |",
             "|---|---|---|---|"]
    for name, s in summary["mutants"].items():
        if s["caught"]:
            cases = _cases_probe_first(s, probes.get(name))
            shown = ", ".join(f"`{c}`" for c in cases[:first])
            more = f" (+{len(s['cases']) - first} more)" if len(s["cases"]) > first else ""
            caught_by = f"{shown}{more}; {s['runs']} run(s) in {len(s['cases'])} case(s)"
            oracles = ", ".join(f"{o} ({n})" for o, n in s["oracles"].items())
        else:
            caught_by, oracles = "**NOT CAUGHT**", "-"
        lines.append(f"| `{name}` | {plants.get(name, '').replace('|', '/')} | {caught_by} | {oracles} |")
    return "\n".join(lines)


def evidence_lines(summary: dict) -> list[str]:
    """One catching run per mutant whose generated kernel differs from the unmutated one."""
    out = []
    for name, s in summary["mutants"].items():
        hit = next((h for h in s["hits"] if h["source_changed"]), None)
        if hit:
            out.append(f"- `{name}`: `{hit['run_id']}`: `{Path(hit['baseline_source']).name}` -> "
                       f"`{Path(hit['mutant_source']).name}`")
        elif s["hits"]:
            h = s["hits"][0]
            out.append(f"- `{name}`: `{h['run_id']}`: {h['from']} -> {h['to']} ({', '.join(h['oracles'])}); "
                       "no kernel generated under the mutant (the launch is refused first)")
    return out


def render(summary: dict, registry) -> str:
    meta = summary["meta"]
    lines = [f"Measured {meta['date']} on backend `{meta['backend']}`"
             + (f" (threads interleaved, switch interval {meta['switch_interval']:g} s)"
                if meta["backend"] == "sim" and meta["switch_interval"] > 0 else "")
             + f": {meta['runs']} runs of {meta['cases']} case files under {len(summary['mutants'])} mutants, "
               f"{meta['jobs']} processes at a time, {meta['wall_s']:.0f} s wall.",
             "", markdown_table(summary, registry), ""]
    survivors = [n for n, s in summary["mutants"].items() if not s["caught"]]
    lines.append("Every mutant is caught." if not survivors else f"Not caught: {', '.join(survivors)}.")
    if summary["baseline_not_green"]:
        lines += ["", "Runs not green without a mutant (left out of the comparison): "
                  + ", ".join(f"`{r}` ({s})" for r, s in summary["baseline_not_green"].items())]
    if summary["problems"]:
        lines += ["", "Processes that did not finish: " + ", ".join(f"{n}: {p}" for n, p in summary["problems"].items())]
    lines += ["", "A catching run whose generated kernel differs from the unmutated one, per mutant:", ""]
    lines += evidence_lines(summary)
    return "\n".join(lines) + "\n"


def update_docs(path: Path, text: str) -> None:
    doc = path.read_text()
    if DOCS_BEGIN not in doc or DOCS_END not in doc:
        raise SystemExit(f"{path}: no {DOCS_BEGIN} ... {DOCS_END} block to replace")
    head, rest = doc.split(DOCS_BEGIN, 1)
    _, tail = rest.split(DOCS_END, 1)
    path.write_text(f"{head}{DOCS_BEGIN}\n{text}{DOCS_END}{tail}")


def case_files(root: Path, patterns: list[str]) -> list[str]:
    patterns = patterns or ["cases/*.yaml"]
    files = []
    for pat in patterns:
        hits = sorted(glob.glob(str(root / pat))) or sorted(glob.glob(pat))
        if not hits:
            raise SystemExit(f"no case file matches {pat!r}")
        files += [str(Path(h).resolve().relative_to(root)) if Path(h).resolve().is_relative_to(root) else h
                  for h in hits]
    return list(dict.fromkeys(files))


def campaign(args) -> int:
    from harness.selftest.mutants import MUTANTS, get_mutant
    registry = MUTANTS
    names = [m.name for m in registry]
    if args.mutants:
        try:
            names = [get_mutant(n.strip()).name for n in args.mutants.split(",") if n.strip()]
        except KeyError as exc:          # a name mistyped on the command line: say which, and the known ones
            raise SystemExit(f"harness mutate: {exc.args[0]}") from None
    files = case_files(args.root, args.cases)
    env = dict(os.environ)
    env.setdefault("HARNESS_CACHE_DIR", str(args.root / ".cache" / "harness" / "mutants"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if args.backend == "sim":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    env["HARNESS_BACKEND"] = args.backend
    print(f"mutation campaign: {len(names)} mutants x {len(files)} case files on {args.backend}, "
          f"{args.jobs} processes at a time", flush=True)
    t0 = time.time()
    results = run_mutants([BASELINE] + names, args, files, env, Path(args.log) if args.log else None)
    wall = time.time() - t0
    base = results[BASELINE]["records"]
    green = {r: rec for r, rec in base.items() if rec["state"] in PASSING}
    summary = {
        "meta": {"date": time.strftime("%Y-%m-%d"), "backend": args.backend, "switch_interval": args.switch_interval,
                 "jobs": args.jobs, "wall_s": round(wall, 1), "runs": len(base), "cases": len(files),
                 "case_files": files,
                 "process_wall_s": {n: r["wall_s"] for n, r in results.items()}},
        "baseline_not_green": {r: rec["state"] for r, rec in base.items() if rec["state"] not in PASSING},
        "problems": {n: r["status"] + (": " + r["stderr"][-300:] if r["stderr"] else "")
                     for n, r in results.items() if r["status"] != "ok"},
        "mutants": {n: summarize(green, results[n]["records"]) for n in names},
        "baseline": base,
    }
    text = render(summary, registry)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1))
    Path(args.markdown).write_text("# Mutation campaign\n\n" + text)
    if args.docs:
        update_docs(Path(args.docs), text)
    print()
    print(text)
    print(f"wrote {out} and {args.markdown}" + (f"; updated {args.docs}" if args.docs else ""))
    survivors = [n for n, s in summary["mutants"].items() if not s["caught"]]
    return 1 if survivors or summary["problems"] else 0


# ----------------------------------------------------------------------------- command line

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cases", nargs="*", help="case files or globs (default: cases/*.yaml)")
    parser.add_argument("--backend", default="sim", choices=("sim", "ptx", "cuda"),
                        help="where the runs execute (default %(default)s)")
    parser.add_argument("--mutants", default="", help="comma-separated mutant names (default: all; see --list)")
    parser.add_argument("-j", "--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes at a time (default %(default)s)")
    parser.add_argument("--switch-interval", type=float, default=None,
                        help="simulator only: the interpreter's thread switch interval in seconds; 0 keeps "
                             "the default (threads rarely interleave). Default: harness.selftest.mutants."
                             "INTERLEAVED_SWITCH_INTERVAL")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per process")
    parser.add_argument("--json", default="reports/mutations.json", help="every run of every mutant")
    parser.add_argument("--markdown", default="reports/mutations.md", help="the table")
    parser.add_argument("--docs", default=None, help="also replace the table block in this file "
                        "(e.g. docs/mutations.md)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--dask", action="store_true",
                        help="run each mutant's process as a task on a Dask LocalCluster of -j workers")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run the mutants on this Dask scheduler's workers (implies --dask)")
    parser.add_argument("--log", default=None, metavar="JSONL",
                        help="append each mutant's result as it arrives (needed by --resume)")
    parser.add_argument("--resume", action="store_true",
                        help="take the mutants already in --log from it instead of running them again")
    parser.add_argument("--render", metavar="JSON", default=None,
                        help="run nothing: write the table of an earlier campaign's results file again")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help=argparse.SUPPRESS)


def rerender(args, registry) -> int:
    """Write the table of an earlier campaign's results file again (markdown, and docs if asked)."""
    summary = json.loads(Path(args.render).read_text())
    text = render(summary, registry)
    Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
    Path(args.markdown).write_text("# Mutation campaign\n\n" + text)
    if args.docs:
        update_docs(Path(args.docs), text)
    print(text)
    return 0 if all(s["caught"] for s in summary["mutants"].values()) else 1


def run_mutate(args) -> int:
    from harness.selftest.mutants import INTERLEAVED_SWITCH_INTERVAL, MUTANTS
    if args.switch_interval is None:
        args.switch_interval = INTERLEAVED_SWITCH_INTERVAL
    args.root = Path(args.root).resolve()
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:28s} {m.plants}\n{'':28s} patches {m.patch_point}; probe {m.probe}")
        return 0
    if args.render:
        return rerender(args, MUTANTS)
    if args.jobs < 1:
        print("--jobs must be at least 1", file=sys.stderr)
        return 2
    if args.resume and not args.log:
        print("harness mutate: --resume needs --log", file=sys.stderr)
        return 2
    return campaign(args)


def add_mutate_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("mutate", help="mutation self-test: plant AD bugs, show which case catches each",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.set_defaults(func=run_mutate)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--worker" in argv:                    # internal: one process of the campaign
        p = argparse.ArgumentParser()
        p.add_argument("--worker", required=True)
        p.add_argument("--backend", required=True)
        p.add_argument("--root", type=Path, required=True)
        p.add_argument("--out", type=Path, required=True)
        p.add_argument("--switch-interval", type=float, default=0.0)
        p.add_argument("cases", nargs="*")
        a = p.parse_args(argv)
        return worker(a.worker, a.backend, a.cases, a.out, a.root.resolve(), a.switch_interval)
    parser = argparse.ArgumentParser(prog="python -m harness.selftest.campaign", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run_mutate(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
