"""pytest plugin: every YAML case under cases/ becomes one test item per run.

Item ids read `cases/foo.yaml::packed-reverse-float32`. Tags become markers. A malformed case file
(or one reusing another file's case id) is one ERROR item, `cases/foo.yaml::load`, recorded in the
results like a run; every other file still runs. Outcomes travel on test reports as plain data
(user_properties), so with pytest-xdist only the controller writes the results file and the report.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

OUTCOME_KEY = "harness_outcome"


def pytest_addoption(parser):
    group = parser.getgroup("harness", "GPU AD regression harness")
    group.addoption("--backend", default=None, choices=("auto", "sim", "ptx", "cuda"),
                    help="where kernels run: auto (cuda when a GPU is visible, else sim), sim, ptx, cuda "
                         "[env HARNESS_BACKEND]")
    group.addoption("--engine", default=None,
                    help="AD engines that run every case, comma-separated: bundled (default), warp, taichi "
                         "(adapters in harness/engines; pip install .[engines]) [env HARNESS_ENGINE]")
    group.addoption("--results", default=None,
                    help="JSON-lines results file, appended to as runs finish ('' for none; default: a new "
                         "folder reports/sessions/<time>-<backend>-<pid>/ per session, listed in reports/index.html)")
    group.addoption("--html", default=None,
                    help="HTML report of this session, written at its end ('' to skip; default: index.html in "
                         "the session folder, or beside --results FILE as FILE.html)")
    group.addoption("--baseline", action="append", default=[], metavar="OLD_RESULTS",
                    help="results file(s) of an earlier session: the session fails (exit 1) only on runs "
                         "that fail now and did not fail there; failures it already had are listed, not fatal")


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_configure(config):
    from .backends import prepare_environment
    try:
        name = _check_start(config)
    except ValueError as exc:                 # misuse: one clear line, before anything runs
        raise pytest.UsageError(str(exc)) from None
    config.harness_backend = name
    from .engines import parse_engines
    try:
        config.harness_engines = tuple(parse_engines(config.getoption("engine") or os.environ.get("HARNESS_ENGINE")))
    except ValueError as exc:
        raise pytest.UsageError(f"--engine: {exc}") from None
    os.environ["HARNESS_BACKEND"] = name       # xdist workers inherit the choice
    prepare_environment(name)                  # before anything imports numba
    config.addinivalue_line("markers", "harness_case: a run of a YAML case")
    if _is_controller(config):
        global _session_config
        _session_config = config
        config.stash[_OUTPUT] = _make_output(config, name)
    config.harness_outcomes = []             # this session's records, for --baseline
    config.harness_other_failures = []       # failed tests that are not case runs (unit tests, crashes)
    from .backends import announce
    config.harness_announcement = announce(config.getoption("backend"), name)


def pytest_sessionstart(session):
    # Printed before pytest's header, also under -q (which hides the header): where kernels run.
    config = session.config
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and _is_controller(config):
        reporter.write_line(f"harness: {config.harness_announcement}")


def _check_start(config) -> str:
    """The backend to use, after checking the options and environment a session depends on."""
    from .backends import cupy_available, resolve, run_timeout_from_env
    name = resolve(config.getoption("backend"))
    if name == "cuda" and _is_controller(config) and not cupy_available():
        raise ValueError("--backend cuda needs cupy, which is not installed (pip install .[gpu]); "
                         "use --backend sim or ptx without a GPU")
    run_timeout_from_env()
    return name


def _make_output(config, backend):
    from .session_output import OutputOptionError, SessionOutput, session_scope
    option = config.option
    selecting = bool(getattr(option, "keyword", "") or getattr(option, "markexpr", "")
                     or getattr(option, "deselect", None) or getattr(option, "lf", False)
                     or getattr(option, "maxfail", 0))
    cwd = Path(config.invocation_params.dir)
    args = [str(a) for a in config.args]
    output = SessionOutput(root=Path(config.rootpath), cwd=cwd, backend=backend,
                           results=config.getoption("results"), html=config.getoption("html"),
                           scope=session_scope(Path(config.rootpath), cwd, args, selecting),
                           command=["pytest", *map(str, config.invocation_params.args)])
    try:
        output.check()
    except OutputOptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    return output


def _case_dir(path: Path) -> bool:
    return path.suffix in (".yaml", ".yml") and "cases" in path.parts


def pytest_collect_file(file_path: Path, parent):
    if _case_dir(file_path):
        return CaseFile.from_parent(parent, path=file_path)
    return None


class CaseFile(pytest.File):
    def collect(self):
        from .cases import expand_runs, load_case_file
        from .errors import CaseError
        root = Path(self.config.rootpath)
        try:
            cases = load_case_file(self.path, root, seen_ids=self.config.stash.setdefault(_CASE_IDS, {}))
        except Exception as error:
            # One ERROR item for this file alone: every other case still runs, and the results
            # (hence the report and `harness run`'s count) show the file under "case file error".
            # The loader raises only CaseError; anything else is a loader bug, still kept to this file.
            if not isinstance(error, CaseError):
                error = CaseError(f"the loader failed: {type(error).__name__}: {error}",
                                  file=self.nodeid.split("::")[0])
            yield MalformedCaseItem.from_parent(self, name=MALFORMED_ITEM_NAME, error=error)
            return
        for case in cases:
            for run in expand_runs(case, self.config.harness_backend, self.config.harness_engines):
                item = RunItem.from_parent(self, name=run.name, run=run)
                for tag in case.tags:
                    marker = tag.replace("-", "_")
                    self.config.addinivalue_line("markers", f"{marker}: case tag '{tag}'")
                    item.add_marker(marker)
                item.add_marker("harness_case")
                yield item

    def repr_failure(self, excinfo):
        from .errors import CaseError
        if isinstance(excinfo.value, CaseError):
            return f"malformed case file: {excinfo.value}"
        return super().repr_failure(excinfo)


_CASE_IDS = pytest.StashKey[dict]()       # case id -> file that declared it, for this session
MALFORMED_ITEM_NAME = "load"


class CaseLoadFailure(Exception):
    """A case file that did not load, raised by its one ERROR item."""


class MalformedCaseItem(pytest.Item):
    """Stands for a case file that did not load: fails with the loader's message and records an
    ERROR outcome (error type CaseError) so the file is counted and reported."""

    def __init__(self, *, error, **kw):
        super().__init__(**kw)
        self.error = error

    def runtest(self):
        from .model import ErrorRecord, Outcome
        source = self.error.file or self.nodeid.split("::")[0]
        outcome = Outcome(
            run_id=f"{source}::{MALFORMED_ITEM_NAME}", case_id=source, source=source, variant=None,
            mode=MALFORMED_ITEM_NAME, dtype=None, backend=self.config.harness_backend, state="ERROR",
            message=f"malformed case file: {self.error}", title="malformed case file",
            error=ErrorRecord(type(self.error).__name__, str(self.error)))
        self.user_properties.append((OUTCOME_KEY, outcome.to_json()))
        raise CaseLoadFailure(outcome.message)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, CaseLoadFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, (self.error.line or 1) - 1, f"malformed case file {self.error.file}"


class RunFailure(Exception):
    def __init__(self, outcome):
        self.outcome = outcome
        super().__init__(outcome.message)


_SESSION = pytest.StashKey["object"]()     # this pytest session's harness.session.Session


def _get_session(config):
    """The session's backend, engines and caches, created with the first run (harness/session.py)."""
    if _SESSION not in config.stash:
        from .session import Session
        config.stash[_SESSION] = Session(Path(config.rootpath), config.harness_backend)
    return config.stash[_SESSION]


class RunItem(pytest.Item):
    def __init__(self, *, run, **kw):
        super().__init__(**kw)
        self.run = run

    def runtest(self):
        outcome = _get_session(self.config).execute(self.run)
        self.user_properties.append((OUTCOME_KEY, outcome.to_json()))
        from .policy import pytest_result
        shown = pytest_result(outcome.state, self.run.case.expect.strict)
        if shown == "xfailed":
            pytest.xfail(outcome.message)
        if shown == "skipped":
            pytest.skip(outcome.message)
        if shown == "failed":
            raise RunFailure(outcome)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, RunFailure):
            from .explain import explain_outcome
            return explain_outcome(excinfo.value.outcome)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.run.case.line - 1, f"{self.run.case.id} [{self.run.name}]"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    # After a device fault the context is unusable: an xdist worker leaves once this run's report
    # is sent, and the controller starts a fresh one for the remaining runs.
    session = item.config.stash.get(_SESSION, None)
    if session is not None and session.backend.poisoned and not _is_controller(item.config):
        os._exit(70)


# ----------------------------------------------------------------------------- results and report
# The controller records every outcome through the session's SessionOutput (harness/sessions.py
# describes where results and reports go); workers only hand outcomes over on their reports.

_OUTPUT = pytest.StashKey["object"]()
_session_config = None


def _output(config):
    return config.stash.get(_OUTPUT, None) if config is not None else None


def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.when == "setup" and report.failed):
        return
    output = _output(_session_config)
    if output is None:
        return
    is_run = False
    for key, value in getattr(report, "user_properties", []):
        if key == OUTCOME_KEY:
            is_run = True
            _session_config.harness_outcomes.append(value)
            output.record(report.nodeid, value)
    if report.failed and not is_run:
        _session_config.harness_other_failures.append(report.nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    """pytest-xdist: the worker running `crashitem` died. Record the run as ERROR (crash), unless
    its outcome was recorded already: then the worker left on purpose after it (a poisoned device
    context, a launch that could not be stopped) and this report is a duplicate, hidden below."""
    output = _output(_session_config)
    if output is None:
        return None
    if crashitem in output.recorded:
        report.outcome = "passed"
        report.harness_duplicate = True
        return None
    worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "a worker")
    output.record_crash(crashitem, worker)
    report.longrepr = f"{report.longrepr}\n(recorded in the results as ERROR, category crash)"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report, config):
    if getattr(report, "harness_duplicate", False):
        return "", "", ""
    return None


def pytest_sessionfinish(session, exitstatus):
    output = _output(session.config) if _is_controller(session.config) else None
    if output is not None:
        output.finish(exitstatus)
    if _is_controller(session.config) and session.config.getoption("baseline"):
        _judge_against_baseline(session)


def _judge_against_baseline(session) -> None:
    """With --baseline: the exit status says whether a run regressed, not whether any run fails.

    A run is a new failure when it is bad now (FAIL, ZERO, NONDET, ERROR, XPASS) and was not bad in
    the baseline (harness.report.compare). Failures of anything that is not a case run (unit
    tests, crashed workers), and collection or internal errors, keep failing the session."""
    from .model import Outcome
    from .report import read_many
    from .report.cli import new_failure_lines
    from .report.compare import compare
    config = session.config
    try:
        _, baseline, _ = read_many(config.getoption("baseline"))
    except (OSError, ValueError) as exc:
        config._harness_baseline_lines = [f"baseline not read: {exc}"]
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    current = [Outcome.from_json(record) for record in config.harness_outcomes]
    comparison = compare(baseline, current)
    lines = [f"baseline: {comparison.summary()}", *new_failure_lines(comparison)]
    if comparison.new_failures:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif session.exitstatus == pytest.ExitCode.TESTS_FAILED and not config.harness_other_failures:
        session.exitstatus = pytest.ExitCode.OK
        lines.append(f"no new failures: the {failing_in_both(baseline, current)} failing run(s) failed in "
                     "the baseline too; exit status 0")
    config._harness_baseline_lines = lines


def failing_in_both(baseline, current) -> int:
    """How many runs are bad now and were bad in the baseline."""
    from .report.compare import BAD_STATES, latest_by_key
    old = latest_by_key(baseline)
    return sum(1 for key, o in latest_by_key(current).items()
               if o.state in BAD_STATES and key in old and old[key].state in BAD_STATES)


def pytest_terminal_summary(terminalreporter, config):
    output = _output(config)
    if output is not None and output.summary:
        terminalreporter.write_sep("-", "harness report")
        for line in output.summary:
            terminalreporter.write_line(line)
        announcement = getattr(config, "harness_announcement", "")
        if "picked by auto" in announcement:      # say why, not only which
            terminalreporter.write_line(announcement)
    for line in getattr(config, "_harness_baseline_lines", []):
        terminalreporter.write_line(line)
