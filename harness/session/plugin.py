"""pytest plugin: every YAML case under cases/ becomes one test item per run.

Item ids read `cases/foo.yaml::packed-reverse-float32`. Tags become markers. A malformed case file
(or one reusing another file's case id) is one ERROR item, `cases/foo.yaml::load`, recorded in the
results like a run; every other file still runs. Outcomes travel on test reports as plain data
(user_properties), so with pytest-xdist only the controller writes the results file and the report.

Everything a pytest session keeps lives in `config.stash`: the chosen backend and engines
(`PluginState`), the session's Runner (backend, engines, caches), the results output. Nothing is
kept in module globals and the plugin writes no environment variable of its own (numba's
NUMBA_ENABLE_CUDASIM is set by harness.backends.prepare_environment, as numba reads it at import);
xdist workers get the controller's backend through their `workerinput`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.policy import State

OUTCOME_KEY = "harness_outcome"
WORKER_BACKEND_KEY = "harness_backend"     # in an xdist worker's workerinput: the controller's choice


@dataclass
class PluginState:
    """What one pytest session decided and collected (config.stash[STATE])."""
    backend: str                                    # sim | ptx | cuda
    engines: tuple                                  # the AD engines every case runs on
    announcement: str = ""                          # "backend sim (picked by auto: ...)"
    outcomes: list = field(default_factory=list)    # this session's run records, for --baseline
    other_failures: list = field(default_factory=list)   # failed tests that are not case runs
    baseline_lines: list = field(default_factory=list)   # the --baseline judgement, for the summary


STATE = pytest.StashKey[PluginState]()


def plugin_state(config) -> PluginState:
    return config.stash[STATE]


def backend_name(config) -> str:
    """The backend this pytest session runs on (the tests' fixtures ask here)."""
    return config.stash[STATE].backend


def pytest_addoption(parser):
    group = parser.getgroup("harness", "GPU AD regression harness")
    group.addoption("--backend", default=None, choices=("auto", "sim", "ptx", "cuda"),
                    help="where kernels run: auto (cuda when a GPU is visible, else sim), sim, ptx, cuda "
                         "[env HARNESS_BACKEND]")
    group.addoption("--engine", default=None,
                    help="AD engines that run every case, comma-separated: bundled (default), warp, taichi "
                         "(adapters in harness/adapters; pip install .[engines]) [env HARNESS_ENGINE]")
    group.addoption("--results", default=None,
                    help="JSON-lines results file, appended to as runs finish ('' for none; default: a new "
                         "folder reports/sessions/<time>-<backend>-<pid>/ per session, listed in reports/index.html)")
    group.addoption("--html", default=None,
                    help="HTML report of this session, written at its end ('' to skip; default: index.html in "
                         "the session folder, or beside --results FILE as FILE.html)")
    group.addoption("--baseline", action="append", default=[], metavar="OLD_RESULTS",
                    help="results file(s) of an earlier session: the session fails (exit 1) only on runs "
                         "that fail now and did not fail there; failures it already had are listed, not fatal")
    group.addoption("--harness-profile", nargs="?", const="", default=None, metavar="JSON",
                    help="print where the suite's time went at the end (per worker: start-up, collection, "
                         "backend start; per run: phases; every kernel compiled, loaded or reused); with a "
                         "path, also write it there as JSON (harness/session/profile.py)")
    group.addoption("--mutant", default=None, metavar="NAME",
                    help="plant one of the AD bugs of harness/selftest/mutants.py in the bundled engine for this "
                         "session (the README tour's failure step; `harness mutate --list` names them)")
    parser.addini("harness_root", default="",
                  help="the project root that case files name kernels relative to, and where reports/ and "
                       ".cache/ go (relative to the ini file; default: pytest's rootdir, or the directory "
                       "pytest was started in when the rootdir has no kernels/ folder)")


def project_root(config) -> Path:
    """Where kernels/, reports/ and .cache/ are: the `harness_root` ini option, else pytest's rootdir,
    else (a directory with no ini file: `pytest cases` makes cases/ the rootdir) the directory pytest
    was started in. Installed as a pytest11 plugin the harness serves any project this way."""
    configured = config.getini("harness_root")
    if configured:
        base = Path(config.inipath).parent if config.inipath else Path(config.rootpath)
        return (base / configured).resolve()
    root, started = Path(config.rootpath), Path(config.invocation_params.dir)
    if not (root / "kernels").is_dir() and (started / "kernels").is_dir() and root.is_relative_to(started):
        return started.resolve()
    return root.resolve()


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_configure(config):
    from harness.backends import prepare_environment
    try:
        name = _check_start(config)
    except ValueError as exc:                 # misuse: one clear line, before anything runs
        raise pytest.UsageError(str(exc)) from None
    from harness.adapters import parse_engines
    try:
        engines = tuple(parse_engines(config.getoption("engine") or os.environ.get("HARNESS_ENGINE")))
    except ValueError as exc:
        raise pytest.UsageError(f"--engine: {exc}") from None
    from harness.session.profile import SuiteProfile, WorkerClock
    config.stash[_CLOCK] = WorkerClock()
    prepare_environment(name)                  # before anything imports numba
    from harness.backends import announce
    config.stash[STATE] = PluginState(name, engines, announce(config.getoption("backend"), name))
    config.addinivalue_line("markers", "harness_case: a run of a YAML case")
    _check_mutant(config)
    if _is_controller(config):
        _steal_work_by_default(config)
        config.stash[_OUTPUT] = _make_output(config, name)
        config.pluginmanager.register(_Recorder(config), "harness-recorder")
        if _profiling(config):
            config.stash[_PROFILE] = SuiteProfile()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist, on the controller: a worker runs on the controller's backend."""
    node.workerinput[WORKER_BACKEND_KEY] = backend_name(node.config)


_CLOCK = pytest.StashKey["object"]()       # this process's WorkerClock (suite_profile.py)
_PROFILE = pytest.StashKey["object"]()     # the controller's SuiteProfile, with --harness-profile


def _profiling(config) -> bool:
    return config.getoption("harness_profile") is not None


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    clock = session.config.stash.get(_CLOCK, None)
    if clock is not None:
        clock.start("collection_s")
    yield
    if clock is not None:
        clock.stop("collection_s")


def pytest_sessionstart(session):
    # Printed before pytest's header, also under -q (which hides the header): where kernels run.
    config = session.config
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and _is_controller(config):
        reporter.write_line(f"harness: {plugin_state(config).announcement}")


def _steal_work_by_default(config) -> None:
    """pytest-xdist's default for `-n` hands the first items out in small chunks and then one or
    two at a time, so the runs of one case file (dtypes, modes, variants: the same kernels, the
    same relation variants) land on many workers and each worker compiles or loads them again.
    `--dist worksteal` gives each worker an even, contiguous share of the collection (whole case
    files, mostly) and balances by moving the tail of the longest queue to an idle worker. Kept
    whenever --dist (or -d) is given explicitly."""
    if getattr(config.option, "dist", None) != "load" or getattr(config.option, "distload", False):
        return
    words = [*map(str, config.invocation_params.args), *os.environ.get("PYTEST_ADDOPTS", "").split(),
             *config.getini("addopts")]
    if any(w == "--dist" or w.startswith("--dist=") or w == "-d" for w in words):
        return
    config.option.dist = "worksteal"


def _check_start(config) -> str:
    """The backend to use, after checking the options and environment a session depends on."""
    from harness.backends import cupy_available, resolve, run_timeout_from_env
    chosen = getattr(config, "workerinput", {}).get(WORKER_BACKEND_KEY)    # a worker: the controller's
    name = chosen or resolve(config.getoption("backend"))
    if name == "cuda" and _is_controller(config):
        from harness.backends.cuda_check import cuda_unavailable_reason
        reason = cuda_unavailable_reason(cupy_available())
        if reason:
            raise ValueError(reason)
    run_timeout_from_env()
    return name


def _check_mutant(config) -> None:
    name = config.getoption("mutant")
    if name is None:
        return
    from harness.selftest.mutants import get_mutant
    try:
        get_mutant(name)
    except KeyError as exc:
        raise pytest.UsageError(f"--mutant: {exc.args[0]}") from None


def _seams(config):
    """The engine parts of this session: a planted bug's with --mutant, else the engine's own."""
    name = config.getoption("mutant")
    if name is None:
        return None
    from harness.selftest.mutants import get_mutant
    return get_mutant(name).seams()


def _make_output(config, backend):
    from harness.report.targets import OutputOptionError
    from harness.session.output import SessionOutput, session_scope
    option = config.option
    selecting = bool(getattr(option, "keyword", "") or getattr(option, "markexpr", "")
                     or getattr(option, "deselect", None) or getattr(option, "lf", False)
                     or getattr(option, "maxfail", 0))
    cwd = Path(config.invocation_params.dir)
    args = [str(a) for a in config.args]
    output = SessionOutput(root=project_root(config), cwd=cwd, backend=backend,
                           results=config.getoption("results"), html=config.getoption("html"),
                           scope=session_scope(project_root(config), cwd, args, selecting),
                           command=["pytest", *map(str, config.invocation_params.args)])
    try:
        output.check()
    except OutputOptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    return output


def _case_dir(path: Path) -> bool:
    return path.suffix in (".yaml", ".yml") and "cases" in path.parts


REDUCED_FOLDER = ("cases", "reduced")       # `harness reduce` writes there (harness/tools/reduce.py)


def pytest_ignore_collect(collection_path: Path, config):
    """Reduced cases are one-off reproducers: `pytest cases` leaves cases/reduced/ out, naming the
    folder or a file in it (`pytest cases/reduced`) runs them."""
    if tuple(collection_path.parts[-2:]) != REDUCED_FOLDER or not collection_path.is_dir():
        return None
    started = Path(config.invocation_params.dir)
    for arg in config.args:
        named = (started / str(arg).split("::")[0]).resolve()
        if named == collection_path.resolve() or named.is_relative_to(collection_path.resolve()):
            return None
    return True


def pytest_collect_file(file_path: Path, parent):
    if _case_dir(file_path):
        return CaseFile.from_parent(parent, path=file_path)
    return None


class CaseFile(pytest.File):
    def collect(self):
        from harness.cases import expand_runs, load_case_file
        from harness.core.errors import CaseError
        root = project_root(self.config)
        try:
            cases = load_case_file(self.path, root, seen_ids=self.config.stash.setdefault(_CASE_IDS, {}), cache=True)
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
            state = plugin_state(self.config)
            for run in expand_runs(case, state.backend, state.engines):
                item = RunItem.from_parent(self, name=run.name, run=run)
                for tag in case.tags:
                    marker = tag.replace("-", "_")
                    self.config.addinivalue_line("markers", f"{marker}: case tag '{tag}'")
                    item.add_marker(marker)
                item.add_marker("harness_case")
                yield item

    def repr_failure(self, excinfo):
        from harness.core.errors import CaseError
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
        from harness.execution.judgement import judge_run
        from harness.model import ErrorRecord, Outcome
        source = self.error.file or self.nodeid.split("::")[0]
        outcome = judge_run(Outcome(
            run_id=f"{source}::{MALFORMED_ITEM_NAME}", case_id=source, source=source, variant=None,
            mode=MALFORMED_ITEM_NAME, dtype=None, backend=backend_name(self.config), state=State.ERROR,
            title="malformed case file"),
            lost=(ErrorRecord(type(self.error).__name__, str(self.error)), f"malformed case file: {self.error}"))
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


_SESSION = pytest.StashKey["object"]()     # this pytest session's Runner (harness/execution/runner.py)


def _get_session(config):
    """The session's runner: its backend, engines and caches, created with the first run."""
    if _SESSION not in config.stash:
        from harness.execution.runner import Runner
        clock = config.stash[_CLOCK]
        clock.start("backend_start_s")            # numba, cupy and the CUDA context load here
        config.stash[_SESSION] = Runner(project_root(config), backend_name(config), seams=_seams(config))
        clock.stop("backend_start_s")
    return config.stash[_SESSION]


class RunItem(pytest.Item):
    def __init__(self, *, run, **kw):
        super().__init__(**kw)
        self.run = run

    def runtest(self):
        session = _get_session(self.config)
        log = getattr(getattr(session.backend, "compiles", None), "log", None)
        first = len(log.records) if log is not None else 0
        outcome = session.execute(self.run)
        if self.config.getoption("mutant"):            # the bug is part of how to reproduce it
            outcome.repro += f" --mutant {self.config.getoption('mutant')}"
        self.user_properties.append((OUTCOME_KEY, outcome.to_json()))
        if _profiling(self.config):
            from harness.session.profile import PROFILE_KEY, run_record
            records = log.since(first) if log is not None else []
            self.user_properties.append((PROFILE_KEY, run_record(records, outcome.timings, outcome.duration)))
        from harness.policy import pytest_result
        shown = pytest_result(outcome.state, self.run.case.expect.strict, self.run.engine)
        if shown == "xfailed":
            pytest.xfail(outcome.message)
        if shown == "skipped":
            named = self.run.engine == "bundled" or outcome.message.startswith(self.run.engine)
            pytest.skip(outcome.message if named else f"{self.run.engine}: {outcome.message}")
        if shown == "failed":
            raise RunFailure(outcome)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, RunFailure):
            from harness.report.explain import explain_outcome
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
# The controller records every outcome through the session's SessionOutput (harness/session/folders.py
# describes where results and reports go); workers only hand outcomes over on their reports.

_OUTPUT = pytest.StashKey["object"]()


def output_of(config):
    return config.stash.get(_OUTPUT, None) if config is not None else None


class _Recorder:
    """The controller's report hooks, registered per session with its config (pytest passes these
    hooks the report only, so the config travels in the object, not in a module global)."""

    def __init__(self, config):
        self.config = config

    def pytest_runtest_logreport(self, report):
        if report.when != "call" and not (report.when == "setup" and report.failed):
            return
        output, state = output_of(self.config), plugin_state(self.config)
        if output is None:
            return
        is_run = False
        from harness.session.profile import PROFILE_KEY
        for key, value in getattr(report, "user_properties", []):
            if key == OUTCOME_KEY:
                is_run = True
                state.outcomes.append(value)
                output.record(report.nodeid, value)
            elif key == PROFILE_KEY and _PROFILE in self.config.stash:
                self.config.stash[_PROFILE].add_run(report.nodeid, _worker_of(report), value)
        if report.failed and not is_run:
            state.other_failures.append(report.nodeid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """pytest-xdist: a worker finished; keep its start-up record for the profile."""
        from harness.session.profile import WORKER_KEY
        record = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if record is not None and _PROFILE in self.config.stash:
            self.config.stash[_PROFILE].add_worker(node.gateway.id, record)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem, report, sched):
        """pytest-xdist: the worker running `crashitem` died. Record the run as ERROR (crash), unless
        its outcome was recorded already: then the worker left on purpose after it (a poisoned device
        context, a launch that could not be stopped) and this report is a duplicate, hidden below."""
        output = output_of(self.config)
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


def _worker_of(report) -> str:
    return getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "main")


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if _profiling(config) and _CLOCK in config.stash:
        from harness.session.profile import WORKER_KEY
        record = config.stash[_CLOCK].as_json()
        if not _is_controller(config):
            config.workeroutput[WORKER_KEY] = record
        elif _PROFILE in config.stash and not config.stash[_PROFILE].workers:     # no xdist: one process
            config.stash[_PROFILE].add_worker("main", record)
    output = output_of(session.config) if _is_controller(session.config) else None
    if output is not None:
        output.finish(exitstatus)
    if _is_controller(session.config) and session.config.getoption("baseline"):
        _judge_against_baseline(session)


def _judge_against_baseline(session) -> None:
    """With --baseline: the exit status says whether a run regressed, not whether any run fails.

    A run is a new failure when it is bad now (FAIL, ZERO, NONDET, ERROR, XPASS) and was not bad in
    the baseline (harness.report.compare). Failures of anything that is not a case run (unit
    tests, crashed workers), and collection or internal errors, keep failing the session."""
    from harness.model import Outcome
    from harness.report import read_many
    from harness.report.cli import new_failure_lines
    from harness.report.compare import compare
    config = session.config
    state = plugin_state(config)
    try:
        _, baseline, _ = read_many(config.getoption("baseline"))
    except (OSError, ValueError) as exc:
        state.baseline_lines = [f"baseline not read: {exc}"]
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    current = [Outcome.from_json(record) for record in state.outcomes]
    comparison = compare(baseline, current)
    lines = [f"baseline: {comparison.summary()}", *new_failure_lines(comparison)]
    if comparison.new_failures:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif session.exitstatus == pytest.ExitCode.TESTS_FAILED and not state.other_failures:
        session.exitstatus = pytest.ExitCode.OK
        lines.append(f"no new failures: the {failing_in_both(baseline, current)} failing run(s) failed in "
                     "the baseline too; exit status 0")
    state.baseline_lines = lines


def failing_in_both(baseline, current) -> int:
    """How many runs are bad now and were bad in the baseline."""
    from harness.report.compare import BAD_STATES, latest_by_key
    old = latest_by_key(baseline)
    return sum(1 for key, o in latest_by_key(current).items()
               if o.state in BAD_STATES and key in old and old[key].state in BAD_STATES)


def pytest_terminal_summary(terminalreporter, config):
    output = output_of(config)
    if output is not None and output.summary:
        terminalreporter.write_sep("-", "harness report")
        for line in output.summary:
            terminalreporter.write_line(line)
        announcement = plugin_state(config).announcement
        if "picked by auto" in announcement:      # say why, not only which
            terminalreporter.write_line(announcement)
    state = config.stash.get(STATE, None)
    for line in state.baseline_lines if state is not None else []:
        terminalreporter.write_line(line)
    profile = config.stash.get(_PROFILE, None)
    if profile is not None:
        terminalreporter.write_sep("-", "harness profile")
        for line in profile.lines():
            terminalreporter.write_line(line)
        if config.getoption("harness_profile"):
            profile.write(config.getoption("harness_profile"))
            terminalreporter.write_line(f"profile written to {config.getoption('harness_profile')}")
