"""One pytest session's results and report (the layouts are described in harness/session/folders.py).

Created by the plugin on the controller at configure time, after the options were checked
(`check_output_options`); the results writer and the session folder are made with the first
record, so sessions that run no case (the harness's own unit tests) leave reports/ alone.
"""
from __future__ import annotations

import os
from pathlib import Path

from harness.report.targets import OutputOptionError, writable_target
from harness.session import folders as sessions


class SessionOutput:
    """Where this session's records and report go, and what it prints at the end."""

    def __init__(self, *, root: Path, cwd: Path, backend: str, results: str | None, html: str | None,
                 scope: str, command: list[str]):
        self.root, self.cwd, self.backend = Path(root), Path(cwd), backend
        self.scope, self.command = scope, command
        self.reports_dir = self.root / "reports"
        self.session = sessions.new_session_id(backend)
        self.writer = None
        self.recorded: set[str] = set()
        self.summary: list[str] = []
        if results == "":                           # no results, hence no report
            self.layout, self.results_path, self.html_path = "none", None, None
        elif results is None:                       # a folder of its own under reports/sessions/
            self.layout, self.results_path = "folder", None
            self.html_path = None if html == "" else (self.cwd / html if html else None)
        else:                                       # an explicit file, appended to
            self.layout = "file"
            self.results_path = self.cwd / results
            default_html = self.results_path.with_suffix(".html")
            self.html_path = None if html == "" else (self.cwd / html if html else default_html)

    def check(self) -> None:
        """Raise OutputOptionError now rather than after the first run."""
        if self.results_path is not None:
            writable_target(self.results_path, "--results")
        if self.html_path is not None:
            writable_target(self.html_path, "--html")
        if self.layout == "folder":
            if self.reports_dir.exists() and not self.reports_dir.is_dir():
                raise OutputOptionError(f"{self.reports_dir} is not a directory (results go to reports/sessions/)")
            probe = self.reports_dir if self.reports_dir.is_dir() else self.root
            if not os.access(probe, os.W_OK | os.X_OK):
                raise OutputOptionError(f"{probe} is not writable (results go to reports/sessions/); "
                                        "give --results FILE elsewhere")

    # ------------------------------------------------------------------ writing
    def _writer(self):
        if self.writer is None and self.layout != "none":
            from harness.results.store import ResultsWriter, collect_metadata
            if self.layout == "folder":
                folder, self.session = sessions.create_session_dir(self.reports_dir, self.session)
                self.results_path = folder / sessions.RESULTS_NAME
                if self.html_path is None:
                    self.html_path = folder / sessions.REPORT_NAME
            self.writer = ResultsWriter(self.results_path, session=self.session)
            meta = collect_metadata(self.backend)
            meta.update(scope=self.scope, command=self.command, pid=os.getpid())
            self.writer.write_meta(meta)
        return self.writer

    def record(self, nodeid: str, outcome: dict) -> None:
        writer = self._writer()
        if writer is not None:
            writer.append(outcome)
        self.recorded.add(nodeid)

    def record_crash(self, nodeid: str, worker: str) -> None:
        from harness.execution.crash import crash_outcome
        self.record(nodeid, crash_outcome(self.root, nodeid, self.backend, worker).to_json())

    def finish(self, exitstatus: int) -> None:
        if self.writer is None:
            return
        lines, counts = [], None
        if self.html_path is not None:
            try:
                from harness.report import write_report
                result = write_report([self.results_path], self.html_path, session=self.session)
                lines.append(result.summary)
                counts = result.state_counts
            except Exception as exc:              # a broken report must not hide the test results
                lines.append(f"report not written: {type(exc).__name__}: {exc}")
        if counts is None:
            counts = self._counts()
        self.writer.write_end(exitstatus=int(exitstatus), runs=len(self.recorded), counts=counts)
        self.writer.close()
        if self.layout == "folder":
            try:
                index = sessions.write_index(self.reports_dir)
                lines.insert(0, f"sessions index: {self._show(index)} (latest full run first); "
                                f"results: {self._show(self.results_path)}")
            except Exception as exc:
                lines.insert(0, f"sessions index not written: {type(exc).__name__}: {exc}")
        elif self._inside_project(self.results_path):       # a named file: listed on the index too
            try:
                sessions.register_named_output(
                    self.reports_dir, self.root, results=self.results_path, html=self.report_path,
                    session=self.session, backend=self.backend, command=self.command,
                    exitstatus=exitstatus, counts=counts)
                index = sessions.write_index(self.reports_dir)
                lines.insert(0, f"listed in {self._show(index)}; results: {self._show(self.results_path)}")
            except Exception as exc:
                lines.insert(0, f"sessions index not written: {type(exc).__name__}: {exc}")
        self.summary = [self._relative_summary(line) for line in lines]

    def _inside_project(self, path: Path) -> bool:
        try:
            return Path(path).resolve().is_relative_to(self.root.resolve())
        except OSError:
            return False

    def _counts(self) -> dict:
        from harness.report.compare import latest_by_key
        from harness.results.store import read_results
        try:
            _, outcomes = read_results(self.results_path, session=self.session)
        except OSError:
            return {}
        counts: dict = {}
        for outcome in latest_by_key(outcomes).values():
            counts[outcome.state] = counts.get(outcome.state, 0) + 1
        return counts

    def _show(self, path: Path) -> str:
        try:
            return str(Path(path).relative_to(self.cwd))
        except ValueError:
            return str(path)

    def _relative_summary(self, line: str) -> str:
        if self.html_path is not None and line.startswith(str(self.html_path)):
            return self._show(self.html_path) + line[len(str(self.html_path)):]
        return line

    @property
    def report_path(self) -> Path | None:
        return self.html_path if self.html_path is not None and self.html_path.exists() else None


def session_scope(root: Path, cwd: Path, args: list[str], selecting: bool) -> str:
    """'full' when the session runs every case of the project (the cases folder or an ancestor,
    nothing deselected, no early stop), else 'partial' (one file, a run id, -k, -m, -x, ...)."""
    if selecting:
        return "partial"
    cases = (Path(root) / "cases").resolve()
    full = False
    for arg in args:
        if "::" in arg:
            return "partial"
        path = (Path(cwd) / arg).resolve()
        if path == cases or path in cases.parents:
            full = True
    return "full" if full else "partial"
