"""Where a pytest session's results and report go, so that no session loses or clobbers another's.

Two layouts (docs/report.md, "Sessions"):

- default: every session that runs cases gets its own folder
  `reports/sessions/<UTC time>-<backend>-<pid>/` holding `results.jsonl` and `index.html`; the
  folder is created exclusively, so concurrent sessions never share one. At the end of each session
  `reports/index.html` is rewritten as the index of sessions: the latest complete full run first,
  then every session, newest first. A partial run (one file, `-k`, a repro command) therefore lands
  beside the last full run, never over it.
- explicit `--results FILE`: the file is appended to (never truncated or unlinked); every record
  carries the session id, each write is one locked append, so concurrent sessions on one file
  interleave whole records and lose none. The session's own report shows only its own records.

Records: `meta` (first, with `session`, `scope`, `command`), `run` (with `session`) and `end` (last:
`exitstatus`, `runs`, `counts` of states, `finished`); the index reads only the first and last line. A session without an `end` record was interrupted (or still runs).
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from harness.results.record_check import printable

SESSIONS_DIR = "sessions"
RESULTS_NAME = "results.jsonl"
REPORT_NAME = "index.html"
INDEX_LIMIT = 500                  # sessions listed on the index page (newest first)


def new_session_id(backend: str) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{backend}-{os.getpid()}"


def create_session_dir(reports_dir: Path, session_id: str) -> tuple[Path, str]:
    """A fresh folder for one session (exclusive: a clash gets a suffix); returns (folder, id)."""
    parent = Path(reports_dir) / SESSIONS_DIR
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        name = session_id if n == 0 else f"{session_id}.{n}"
        try:
            (parent / name).mkdir()
            return parent / name, name
        except FileExistsError:
            continue
    raise OSError(f"{parent}: cannot create a session folder for {session_id}")


@dataclass
class SessionInfo:
    folder: Path
    session: str
    started: str = ""
    backend: str = ""
    scope: str = "partial"
    command: list = field(default_factory=list)
    git_revision: str | None = None
    finished: str | None = None
    exitstatus: int | None = None
    counts: dict = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.finished is not None and self.exitstatus in (0, 1)   # ran to the end (failures allowed)

    @property
    def results(self) -> Path:
        return self.folder / RESULTS_NAME

    @property
    def report(self) -> Path:
        return self.folder / REPORT_NAME


def _first_and_last_lines(path: Path, tail_bytes: int = 1 << 16) -> tuple[str, str]:
    with open(path, "rb") as fh:
        first = fh.readline()
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - tail_bytes))
        lines = fh.read().splitlines()
    return first.decode("utf-8", "replace"), (lines[-1].decode("utf-8", "replace") if lines else "")


def _json_object(line: str) -> dict:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def read_session(folder: Path) -> SessionInfo | None:
    """The facts of one session folder from its first (meta) and last (end) records only, so the
    index stays cheap however many runs each session holds. None without a results file."""
    path = Path(folder) / RESULTS_NAME
    if not path.is_file() or path.is_symlink():
        return None
    info = SessionInfo(folder=Path(folder), session=Path(folder).name)
    try:
        first, last = _first_and_last_lines(path)
    except OSError:
        return info
    meta, end = _json_object(first), _json_object(last)
    if meta.get("type") == "meta":
        info.started = str(meta.get("started", ""))
        info.backend = str(meta.get("backend", ""))
        info.scope = "full" if meta.get("scope") == "full" else "partial"
        command = meta.get("command")
        info.command = [str(a) for a in command] if isinstance(command, list) else []
        info.git_revision = meta.get("git_revision") if isinstance(meta.get("git_revision"), str) else None
    if end.get("type") == "end":
        info.finished = str(end.get("finished", "")) or None
        status = end.get("exitstatus")
        info.exitstatus = status if isinstance(status, int) and not isinstance(status, bool) else None
        counts = end.get("counts")
        if isinstance(counts, dict):
            info.counts = {str(k): v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}
    return info


def list_sessions(reports_dir: Path) -> list[SessionInfo]:
    """Every session under reports_dir, newest first (folder names start with the UTC time)."""
    parent = Path(reports_dir) / SESSIONS_DIR
    if not parent.is_dir():
        return []
    folders = sorted((p for p in parent.iterdir() if p.is_dir() and not p.is_symlink()),
                     key=lambda p: p.name, reverse=True)[:INDEX_LIMIT]
    return [info for info in map(read_session, folders) if info is not None]


def latest_full(reports_dir: Path) -> SessionInfo | None:
    """The newest complete full run (every case of the project, run to the end), or None."""
    return next((s for s in list_sessions(reports_dir) if s.scope == "full" and s.complete), None)


def _counts_text(counts: dict) -> str:
    if not counts:
        return "(not counted: the session did not finish)"
    total = sum(counts.values())
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"{total} run{'' if total == 1 else 's'}" + (f": {parts}" if parts else "")


def _row(info: SessionInfo, reports_dir: Path) -> str:
    e = lambda text: html.escape(printable(text, 300))    # noqa: E731
    report = info.report.relative_to(reports_dir).as_posix()
    results = info.results.relative_to(reports_dir).as_posix()
    status = "interrupted or running" if info.finished is None else f"exit {info.exitstatus}"
    link = f'<a href="{html.escape(report)}">{e(info.session)}</a>' if info.report.is_file() else e(info.session)
    return (f"<tr><td>{link}</td><td>{e(info.scope)}</td><td>{e(info.backend)}</td><td>{e(info.started)}</td>"
            f"<td>{e(status)}</td><td>{e(_counts_text(info.counts))}</td><td><code>{e(' '.join(info.command))}</code></td>"
            f'<td><a href="{html.escape(results)}">results</a></td></tr>')


NAMED_DIR = "named"                # reports/named/<file>.json: sessions written to --results FILE


def _named_entry_path(reports_dir: Path, results: Path, root: Path) -> Path:
    try:
        key = results.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        key = results.resolve().as_posix()
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)[:200]
    return Path(reports_dir) / NAMED_DIR / f"{safe}.json"


def register_named_output(reports_dir: Path, root: Path, *, results: Path, html: Path | None, session: str,
                          backend: str, command: list, exitstatus: int, counts: dict) -> Path:
    """A session that wrote to a named file (`--results reports/sim.jsonl --html reports/sim.html`,
    as tox does) is listed on the index too: one small entry per results file, the latest session's."""
    from harness.results.store import atomic_write_text
    path = _named_entry_path(reports_dir, results, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"results": str(results.resolve()), "html": str(html.resolve()) if html else None,
             "session": session, "backend": backend, "command": [str(a) for a in command],
             "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
             "exitstatus": int(exitstatus), "counts": counts}
    return atomic_write_text(path, json.dumps(entry, indent=1))


def list_named_outputs(reports_dir: Path) -> list[dict]:
    folder = Path(reports_dir) / NAMED_DIR
    entries = [_json_object(p.read_text(errors="replace")) for p in sorted(folder.glob("*.json"))
               if p.is_file() and not p.is_symlink()] if folder.is_dir() else []
    return sorted((e for e in entries if isinstance(e.get("results"), str)),
                  key=lambda e: str(e.get("finished", "")), reverse=True)


def _link(target: str | None, reports_dir: Path, text: str) -> str:
    if not target:
        return "(no report)"
    if not Path(target).is_file():
        return html.escape(f"{text} (missing)")
    href = os.path.relpath(target, Path(reports_dir).resolve())
    return f'<a href="{html.escape(Path(href).as_posix())}">{html.escape(printable(text, 300))}</a>'


def _named_row(entry: dict, reports_dir: Path) -> str:
    e = lambda text: html.escape(printable(str(text), 300))    # noqa: E731
    counts = entry.get("counts") if isinstance(entry.get("counts"), dict) else {}
    counts = {str(k): v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}
    name = Path(entry["html"]).name if entry.get("html") else Path(entry["results"]).name
    command = entry.get("command") if isinstance(entry.get("command"), list) else []
    return (f"<tr><td>{_link(entry.get('html'), reports_dir, name)}</td><td>{e(entry.get('backend', ''))}</td>"
            f"<td>{e(entry.get('finished', ''))}</td><td>{e('exit ' + str(entry.get('exitstatus')))}</td>"
            f"<td>{e(_counts_text(counts))}</td><td><code>{e(' '.join(map(str, command)))}</code></td>"
            f"<td>{_link(entry['results'], reports_dir, 'results')}</td></tr>")


def render_index(reports_dir: Path, sessions: list[SessionInfo]) -> str:
    reports_dir = Path(reports_dir)
    full = next((s for s in sessions if s.scope == "full" and s.complete), None)
    head = ("<tr><th>session</th><th>scope</th><th>backend</th><th>started (UTC)</th><th>status</th>"
            "<th>runs</th><th>command</th><th>results</th></tr>")
    latest = (f"<h2>Latest full run</h2><table>{head}{_row(full, reports_dir)}</table>" if full else
              "<h2>Latest full run</h2><p>No complete full run yet (run <code>harness run</code>).</p>")
    rows = "".join(_row(s, reports_dir) for s in sessions)
    named = list_named_outputs(reports_dir)
    named_head = ("<tr><th>report</th><th>backend</th><th>finished (UTC)</th><th>status</th><th>runs</th>"
                  "<th>command</th><th>results</th></tr>")
    named_html = ("<h2>Reports written to named files (--results FILE, --html FILE), latest first</h2>"
                  f"<table>{named_head}{''.join(_named_row(x, reports_dir) for x in named)}</table>" if named else "")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>GPU AD sessions</title>"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            "<style>body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}"
            "code{font-size:12px}</style></head><body><h1>GPU AD harness: sessions</h1>"
            f"{latest}{named_html}<h2>All sessions, newest first</h2><table>{head}{rows}</table>"
            "<p>Each session has its own folder under <code>sessions/</code>; delete old ones freely.</p>"
            "</body></html>\n")


def write_index(reports_dir: Path) -> Path:
    """Rewrite reports_dir/index.html from the session folders (atomic; safe to race: each writer
    renders every folder it sees)."""
    from harness.results.store import atomic_write_text
    reports_dir = Path(reports_dir)
    return atomic_write_text(reports_dir / "index.html", render_index(reports_dir, list_sessions(reports_dir)))
