"""The results store: one JSON line per finished run, the source of truth for every report.

Layout of a results file (documented field by field in docs/report.md):

    {"type": "meta", "schema": 1, "started": ..., "versions": {...}, ...}   # once per session
    {"type": "run", "run_id": ..., "state": "PASS", ...}                     # Outcome.to_json()
    ...

Each record is flushed and fsync'd as it is written, so a run killed at any moment leaves every
finished record on disk; the reader skips a torn last line instead of failing.
"""
from __future__ import annotations

import datetime as _dt
import fcntl
import json
import math
import os
import platform
import subprocess
import tempfile
import threading
import time
from importlib import metadata as _importlib_metadata
from pathlib import Path
from typing import Any

from harness.model import Outcome
from harness.results.record_check import MAX_DEPTH, check_run_record, has_lone_surrogate, printable, too_deep

SCHEMA_VERSION = 1

# Distribution names whose versions a meta line records; absent ones are recorded as null.
_VERSIONED_DISTRIBUTIONS = ("gpu-ad-harness", "numpy", "numba", "numba-cuda", "jinja2", "pyyaml",
                            "warp-lang", "taichi")    # the adapters' systems (harness/adapters)
_CUPY_DISTRIBUTIONS = ("cupy-cuda13x", "cupy-cuda12x", "cupy")
_PROJECT_ROOT = Path(__file__).resolve().parents[2]    # harness/results/store.py -> the checkout


def _json_default(value: Any) -> Any:
    """Encode the few non-JSON types that may sneak into metrics (numpy scalars, tuples, sets)."""
    if hasattr(value, "item") and callable(value.item):      # numpy scalar / 0-d array
        return value.item()
    if hasattr(value, "tolist") and callable(value.tolist):  # small numpy array
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, Path):
        return str(value)
    return repr(value)


_NONFINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _finite_json(value: Any) -> Any:
    """Non-finite floats become the strings "NaN", "Infinity", "-Infinity": a NaN gradient is a
    finding worth keeping, and strict JSON readers (jq, browsers) reject the bare tokens."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_json(v) for v in value]
    return value


def _restore_nonfinite(value: Any) -> Any:
    if isinstance(value, str) and value in _NONFINITE:
        return _NONFINITE[value]
    if isinstance(value, dict):
        return {k: _restore_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore_nonfinite(v) for v in value]
    return value


def _encode(record: dict) -> str:
    return json.dumps(_finite_json(record), default=_json_default, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)


def _record_from(outcome_or_dict: Outcome | dict) -> dict:
    if isinstance(outcome_or_dict, Outcome):
        data = outcome_or_dict.to_json()
    elif isinstance(outcome_or_dict, dict):
        data = dict(outcome_or_dict)
    else:
        raise TypeError(f"expected an Outcome or a dict, got {type(outcome_or_dict).__name__}")
    data.pop("type", None)
    return {"type": "run", **data}


class ResultsWriter:
    """Appends meta, run and end records to a JSON-lines results file.

    Opened in append mode and never truncated: several sessions (or a rerun after a crash) extend
    one file, and each record carries its session's id when one is given. Every record is one
    write under an exclusive lock (fcntl.flock), so concurrent sessions appending to the same
    file interleave whole lines and lose none. Thread-safe: pytest's controller may report from
    more than one thread.
    """

    def __init__(self, path: str | os.PathLike, session: str | None = None):
        self.path = Path(path)
        self.session = session
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")

    def write_meta(self, meta: dict) -> None:
        record = {k: v for k, v in meta.items() if k != "type"}
        record.setdefault("schema", SCHEMA_VERSION)
        self._write_record({"type": "meta", **record})

    def append(self, outcome_or_dict: Outcome | dict) -> None:
        self._write_record(_record_from(outcome_or_dict))

    def write_end(self, **facts) -> None:
        """The session's last record: it ran to the end (exit status, run count, time)."""
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self._write_record({"type": "end", "finished": now, **facts})

    def _write_record(self, record: dict) -> None:
        if self.session is not None:
            record = {**record, "session": self.session}
        self._write_line(_encode(record))

    def _write_line(self, line: str) -> None:
        with self._lock:
            if self._file.closed:
                raise ValueError(f"{self.path}: results writer is closed")
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX)
            try:
                # A writer killed mid-record leaves a line with no newline; start on a fresh line so
                # this record is not glued to the torn one (the reader then skips only the torn part).
                if os.fstat(self._file.fileno()).st_size > 0 and not _ends_with_newline(self.path):
                    line = "\n" + line
                self._file.write(line + "\n")
                self._file.flush()
                os.fsync(self._file.fileno())
            finally:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def read_results(path: str | os.PathLike, session: str | None = None) -> tuple[dict, list[Outcome]]:
    """Read a results file: (meta, outcomes in file order).

    Tolerant by design, because the file may come from a killed run: a line that is not valid JSON
    or not a valid record (typically the torn last line) is skipped and noted in
    meta["warnings"]. When a file holds several sessions, the last meta line is returned and
    meta["sessions"] counts them. Lines of unknown type are ignored (forward compatibility).
    With `session`, only that session's records are read (a file that several sessions append to).
    """
    path = Path(path)
    meta: dict = {}
    sessions = 0
    warnings: list[str] = []
    outcomes: list[Outcome] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                if has_lone_surrogate(line):
                    raise ValueError("text with a lone surrogate (not valid Unicode)")
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                if too_deep(record):               # (json itself stops at ~1000 levels: RecursionError)
                    raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
                kind = record.get("type", "run" if "run_id" in record else None)
                if session is not None and record.get("session") != session:
                    continue
                if kind == "meta":
                    meta = {k: v for k, v in record.items() if k != "type"}
                    sessions += 1
                elif kind == "run":
                    check_run_record(record)           # untrusted: a wrong type is skipped here
                    if "oracles" in record:            # numbers written as "NaN"/"Infinity"
                        record["oracles"] = _restore_nonfinite(record["oracles"])
                    outcomes.append(Outcome.from_json({k: v for k, v in record.items() if k != "type"}))
            except (ValueError, TypeError, KeyError, RecursionError) as exc:
                torn = "" if line.endswith("\n") else " (torn last line)"
                reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
                warnings.append(printable(f"{path}:{lineno}: skipped unreadable record{torn}: {reason}"))
    if sessions > 1:
        meta["sessions"] = sessions
    if warnings:
        previous = meta.get("warnings") if isinstance(meta.get("warnings"), list) else []
        meta["warnings"] = [printable(w) for w in previous] + warnings
    return meta, outcomes


# ----------------------------------------------------------------------------- metadata

def _version_of(distribution: str) -> str | None:
    try:
        return _importlib_metadata.version(distribution)
    except Exception:
        return None


def _command_output(argv: list[str], cwd: Path | None = None, timeout: float = 10.0) -> str | None:
    """stdout of a command, or None when it is missing, fails or hangs: metadata never fails a run."""
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def _gpu_names() -> list[str]:
    listing = _command_output(["nvidia-smi", "-L"])
    if not listing:
        return []
    # Lines look like "GPU 0: NVIDIA H200 (UUID: GPU-...)"; keep the model name, drop the UUID.
    names = []
    for line in listing.splitlines():
        _, _, rest = line.partition(":")
        names.append(rest.split("(UUID")[0].strip() or line.strip())
    return names


def collect_metadata(backend: str, seed: int | None = None) -> dict:
    """Facts about this session for the meta line. Every probe is guarded: this never raises."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in _VERSIONED_DISTRIBUTIONS:
        versions[name] = _version_of(name)
    versions["cupy"] = next(filter(None, map(_version_of, _CUPY_DISTRIBUTIONS)), None)
    git_cwd = _PROJECT_ROOT if (_PROJECT_ROOT / ".git").exists() else Path.cwd()
    now = time.time()
    return {
        "schema": SCHEMA_VERSION,
        "started": _dt.datetime.fromtimestamp(now, _dt.timezone.utc).isoformat(timespec="seconds"),
        "started_ts": now,
        "backend": backend,
        "seed": seed,
        "versions": versions,
        "platform": _safe(platform.platform),
        "machine": _safe(platform.machine),
        "git_revision": _command_output(["git", "rev-parse", "HEAD"], cwd=git_cwd, timeout=5.0),
        "gpus": _gpu_names(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def _safe(probe) -> str | None:
    try:
        return probe()
    except Exception:
        return None


# ----------------------------------------------------------------------------- atomic writes

def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write text so that readers see the old file or the new one, never a half-written one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp_name, 0o644)      # mkstemp makes 0600; a report is meant to be shared
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        raise
    return path

