"""A readable account of a failed run, for pytest's failure output and the command line."""
from __future__ import annotations

from pathlib import Path

from harness.report.labels import pair_labels
from harness.model import Outcome
from harness.policy import State


def _num(x) -> str:
    return f"{x: .6g}" if isinstance(x, (int, float)) else str(x)


def _engine(o: Outcome) -> str:
    """Which engine failed (the same case can pass in one and fail in another)."""
    return f"{o.engine} {o.engine_version}".strip() if o.engine_version else o.engine


def _relative(path: str) -> str:
    """A path as the reader can type it: relative to the directory they ran from when inside it."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def explain_outcome(o: Outcome) -> str:
    lines = [f"{o.state}: {o.case_id} [{o.mode}{'-' + o.dtype if o.dtype else ''}"
             f"{', variant ' + o.variant if o.variant else ''}] on {o.backend}, engine {_engine(o)}",
             f"  kernel: {o.kernel}"]
    if o.title:
        lines.append(f"  {o.title}")
    lines.append(f"  {o.message}")
    if o.oracles:
        lines.append("  oracles:")
        for v in o.oracles:
            lines.append(f"    {v.verdict.upper():5} {v.name}: {v.message}")
            if v.worst and v.verdict != "pass":
                first, second = pair_labels(v.name)
                lines.append(f"          {'entry':>18} {first:>13} {second:>13} {'abs err':>11} {'rel err':>11}")
                for w in v.worst[:8]:
                    lines.append(f"          {w.index:>18} {_num(w.ad):>13} {_num(w.fd):>13} "
                                 f"{w.abs_err:11.3g} {w.rel_err:11.3g}")
    if o.error is not None:
        lines.append(f"  error: {o.error.type}: {o.error.message}")
        if o.error.traceback and o.state == State.ERROR:
            tail = o.error.traceback.strip().splitlines()[-6:]
            lines += ["    " + t for t in tail]
    for mode, path in o.sources.items():
        lines.append(f"  generated {mode} kernel: {_relative(path)}")
    lines.append(f"  reproduce: {o.repro}")
    return "\n".join(lines)
