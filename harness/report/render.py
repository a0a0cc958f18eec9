"""Build the report's view model from outcomes and render it with jinja2.

The page is static and self-contained (inline CSS, JS and SVG; no external fetch). Everything a
case supplies is escaped by jinja2's autoescape; the only Markup this module creates is SVG that
svg.py builds from escaped text. Links are rendered as <a href> only for http(s) URLs.

Size discipline for large run sets (5,000 runs must stay under 10 MB and paint in under 2 s; the
browser's cost is mostly parsing, so bytes and element count are what matter): per-run details
live in closed <details> elements (not laid out until opened); a clean pass is rendered as a few
lines of text rather than tables (`RunView.compact`), since it is most of the runs and the least
read; case-level facts (title, arguments) are rendered once per case; templates trim whitespace;
generated sources are embedded for non-passing runs only unless asked otherwise.
"""
from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import os
import re
import stat
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import jinja2
from markupsafe import Markup

from harness.core.paths import generated_source_dirs
from harness.report.labels import pair_labels
from harness.model import MODES, STATES, JobRecord, OracleVerdict, Outcome
from harness.report import svg
from harness.report.state_chart import state_bars
from harness.report.step_plot import step_plot
from harness.report.categories import CategoryRule, categorize_outcome, load_rules
from harness.policy import QUIET, State
from harness.report.compare import (BAD_STATES, DEFAULT_ENGINE, Change, ResultsDiff, compare, engine_of,
                                    latest_by_key, run_key)

TEMPLATES_DIR = Path(__file__).with_name("templates")
_BACKEND_ORDER = ("sim", "ptx", "cuda")
_PLOT_STATES = BAD_STATES | {State.XFAIL}
_COMPACT_STATES = QUIET
_SOURCE_EMBED_LIMIT = 64 * 1024          # bytes of one generated source shown in the page
_SOURCE_TOTAL_LIMIT = 3 * 1024 * 1024    # bytes of all embedded sources together
_SOURCE_SUFFIXES = frozenset({".py", ".ptx", ".ll", ".cu", ".txt"})
_GENERATED_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}")


_LIST_LIMIT = 200                        # runs listed per category / comparison list
_HTTP_URL = re.compile(r"^https?://[^\s<>\"'`]+$", re.IGNORECASE)


# ----------------------------------------------------------------------------- small helpers

def slug(text: str) -> str:
    """An HTML id fragment from arbitrary text, unique thanks to a short hash of the original."""
    readable = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:80] or "x"
    return f"{readable}-{hashlib.sha1(text.encode('utf-8')).hexdigest()[:6]}"


def run_anchor(outcome: Outcome) -> str:
    # Readable part from case id + run name (the run id's source path only adds length); the hash
    # is of the full (run_id, backend) key, so anchors stay unique.
    name = outcome.run_id.rsplit("::", 1)[-1]
    engine = engine_of(outcome)
    where = outcome.backend if engine == DEFAULT_ENGINE else f"{engine}-{outcome.backend}"
    readable = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{outcome.case_id}-{name}-{where}").strip("-")[:80]
    key = f"{outcome.run_id}@{outcome.backend}" + ("" if engine == DEFAULT_ENGINE else f"@{engine}")
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:6]
    return f"run-{readable or 'x'}-{digest}"


def safe_href(url: str) -> str | None:
    """The URL if it may become an href (http or https only), else None: shown as plain text."""
    candidate = (url or "").strip()
    return candidate if _HTTP_URL.match(candidate) else None


def fmt_number(value) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def fmt_seconds(value) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    if value < 1e-3:
        return f"{value * 1e6:.0f} us"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def fmt_mapping(mapping: dict) -> str:
    """A compact one-line `k=v` rendering of a metrics or config dict (escaped by the template)."""
    if not isinstance(mapping, dict):
        return str(mapping)
    return ", ".join(f"{k}={fmt_number(v) if not isinstance(v, (dict, list)) else json.dumps(v, default=str)}"
                     for k, v in mapping.items())


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """`1 run`, `2 runs`, `0 runs`."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"


def _state_rank(state: str) -> int:
    return STATES.index(state) if state in STATES else len(STATES)


def fmt_timings(timings: dict) -> str:
    return ", ".join(f"{phase} {fmt_seconds(t)}" for phase, t in timings.items())


_PLOTTED_METRICS = ("stages",)           # drawn by step_plot where it draws them


def shown_metrics(verdict: OracleVerdict, plotted: bool) -> dict:
    """An oracle's metrics as the text beside its plots shows them: what a plot draws is left out."""
    if not plotted:
        return verdict.metrics
    return {k: v for k, v in verdict.metrics.items() if k not in _PLOTTED_METRICS}


def oracle_line(oracles) -> str:
    return "; ".join(f"{v.name} {v.verdict}" + (f" ({fmt_mapping(v.metrics)})" if v.metrics else "")
                     + (f": {v.message}" if v.message else "") for v in oracles)


def jobs_line(tree) -> str:
    """A job tree on one line: children follow their parent inside brackets."""
    def one(node) -> str:
        job = node.job
        text = f"{job.function} {job.mode}\u2192{job.target} #{job.id}"
        if not job.kernel:
            text += " (device function)"
        if job.config:
            text += f" {{{fmt_mapping(job.config)}}}"
        if node.children:
            text += " [" + "; ".join(one(child) for child in node.children) + "]"
        return text
    return "; ".join(one(node) for node in tree)


def ptx_line(ptx: dict) -> str:
    return "; ".join(f"{kernel}: {fmt_mapping(facts)}" for kernel, facts in ptx.items())


# ----------------------------------------------------------------------------- view model

@dataclass(frozen=True)
class Column:
    variant: str
    mode: str
    dtype: str
    backend: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.variant, self.mode, self.dtype, self.backend


def column_of(outcome: Outcome) -> Column:
    return Column(outcome.variant or "base", outcome.mode, outcome.dtype or "declared", outcome.backend)


def _column_sort_key(column: Column):
    mode_rank = MODES.index(column.mode) if column.mode in MODES else len(MODES)
    backend_rank = _BACKEND_ORDER.index(column.backend) if column.backend in _BACKEND_ORDER else 9
    return (column.variant != "base", column.variant, mode_rank, column.mode,
            column.dtype != "declared", column.dtype, backend_rank, column.backend)


_ENGINE_ORDER = (DEFAULT_ENGINE,)


def short_dtype(dtype: str) -> str:
    """float32 -> f32, int64 -> i64; 'declared' (the case's own dtypes) -> ''."""
    if dtype == "declared":
        return ""
    return dtype.replace("float", "f").replace("uint", "u").replace("int", "i").replace("complex", "c")


_SHORT_STATE = {State.UNSUPPORTED: "UNSUP"}


@dataclass(frozen=True)
class MatrixColumn:
    """A column of the compatibility matrix: one engine on one backend in one mode. Variants are
    sub-rows and dtypes are shown inside the cell, so the columns stay a handful."""
    engine: str
    backend: str
    mode: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.engine, self.backend, self.mode

    @property
    def target(self) -> str:
        return f"{self.engine} \u00b7 {self.backend}"


def matrix_column_of(outcome: Outcome) -> MatrixColumn:
    return MatrixColumn(engine_of(outcome), outcome.backend, outcome.mode)


def _matrix_column_sort_key(column: MatrixColumn):
    engine_rank = _ENGINE_ORDER.index(column.engine) if column.engine in _ENGINE_ORDER else 9
    backend_rank = _BACKEND_ORDER.index(column.backend) if column.backend in _BACKEND_ORDER else 9
    mode_rank = MODES.index(column.mode) if column.mode in MODES else len(MODES)
    return (engine_rank, column.engine, backend_rank, column.backend, mode_rank, column.mode)


@dataclass
class LinkView:
    text: str
    href: str | None


@dataclass
class JobNode:
    job: JobRecord
    children: list["JobNode"] = field(default_factory=list)


@dataclass
class SourceView:
    mode: str
    path: str
    text: str | None
    note: str = ""


@dataclass
class RunView:
    outcome: Outcome
    anchor: str
    column: Column
    category: str | None
    worst_blocks: list[tuple[OracleVerdict, Markup | None]]   # oracles with worst entries
    job_tree: list[JobNode]
    ptx_facts: list[str]
    sources: list[SourceView]
    args_differ: bool                    # this run's argument table differs from the case's
    step_plots: dict = field(default_factory=dict)   # oracle name -> its FD refinement stages plot

    @property
    def state(self) -> str:
        return self.outcome.state

    @property
    def where(self) -> str:
        """The engine and the backend of the run (the bundled engine named too: a case can pass in
        one engine and fail in another, and the entry says which it is)."""
        return f"{engine_of(self.outcome)} \u00b7 {self.outcome.backend}"

    @property
    def chip(self) -> str:
        """The run inside its matrix cell: dtype and state, e.g. `f32 FAIL`."""
        state = _SHORT_STATE.get(self.state, self.state)
        dtype = short_dtype(self.column.dtype)
        return f"{dtype} {state}" if dtype else state

    @property
    def compact_text(self) -> str:
        """The compact rendering's lines, joined by newlines (shown with CSS white-space: pre-line;
        a <br> per line would cost one element per line per run)."""
        o = self.outcome
        head = f"run {o.run_id} \u00b7 expect {o.expect} \u00b7 {fmt_seconds(o.duration)}"
        lines = [head + (f" ({fmt_timings(o.timings)})" if o.timings else "")]
        if o.oracles:
            lines.append(f"oracles: {oracle_line(o.oracles)}")
        if self.job_tree:
            lines.append(f"compile jobs: {jobs_line(self.job_tree)}")
        if o.ptx:
            lines.append(f"PTX facts: {ptx_line(o.ptx)}")
        lines += [f"{engine_of(o)} warned: {w}" for w in o.engine_warnings]
        lines += [f"generated kernel ({src.mode}): {src.path}" + (f" ({src.note})" if src.note else "")
                  for src in self.sources]
        if not self.sources:
            lines.append(self.no_kernel_note)
        return "\n".join(lines)

    @property
    def no_kernel_note(self) -> str:
        """Said instead of a generated kernel's path when the run has none."""
        error = self.outcome.error
        why = f"the run raised before code generation: {error.type}" if error else "no kernel was generated"
        return f"generated kernel: none ({why})"

    @property
    def compact(self) -> bool:
        """Nothing to investigate: render as text lines instead of tables (see the module doc)."""
        o = self.outcome
        return (o.state in _COMPACT_STATES and o.error is None and not self.worst_blocks and not self.step_plots
                and all(v.verdict in ("pass", "skip") for v in o.oracles)
                and all(src.text is None for src in self.sources))


@dataclass
class CaseView:
    case_id: str
    anchor: str
    group: str
    title: str
    description: str
    source: str
    kernel: str
    tags: list[str]
    links: list[LinkView]
    args: list[dict]
    runs: list[RunView]
    rows: list["MatrixRow"] = field(default_factory=list)

    @property
    def states(self) -> list[str]:
        return sorted({run.state for run in self.runs})

    @property
    def state_counts(self) -> list[tuple[str, int]]:
        counts = Counter(run.state for run in self.runs)
        return sorted(counts.items(), key=lambda item: (_state_rank(item[0]), item[0]))

    @property
    def bad_count(self) -> int:
        return sum(run.state in BAD_STATES for run in self.runs)

    @property
    def search_text(self) -> str:
        return " ".join([self.case_id, self.title, self.source, self.kernel, *self.tags]).lower()


@dataclass
class MatrixRow:
    """One line of a case in the matrix: the base configuration, or one variant (a sub-row)."""
    variant: str
    cells: list[list[RunView]]           # per matrix column, the runs (one per dtype)

    @property
    def is_variant(self) -> bool:
        return self.variant != "base"


@dataclass
class ReportView:
    title: str
    generated: str
    total_runs: int
    state_counts: list[tuple[str, int]]
    columns: list[MatrixColumn]
    groups: list[tuple[str, list[CaseView]]]
    cases: list[CaseView]
    tags: list[str]
    categories: list[tuple[str, list[RunView]]]
    comparison: ResultsDiff | None
    anchors: dict                        # run key -> anchor, for comparison links
    metas: list[tuple[str, dict]]
    bench: list[tuple[str, Markup]]
    warnings: list[str]
    state_chart: Markup = Markup("")      # states per engine, backend and mode
    path_prefixes: list[tuple[str, str]] = field(default_factory=list)   # see local_paths_removed
    list_limit: int = _LIST_LIMIT
    states: tuple[str, ...] = STATES

    @property
    def column_targets(self) -> list[tuple[str, int]]:
        """(engine \u00b7 backend, how many mode columns it spans), for the matrix's first header row."""
        spans: list[tuple[str, int]] = []
        for column in self.columns:
            if spans and spans[-1][0] == column.target:
                spans[-1] = (column.target, spans[-1][1] + 1)
            else:
                spans.append((column.target, 1))
        return spans

    def anchor_of(self, change: Change) -> str | None:
        return self.anchors.get(change.key)


def _job_tree(jobs: list[JobRecord]) -> list[JobNode]:
    nodes = {job.id: JobNode(job) for job in jobs}
    roots: list[JobNode] = []
    for job in jobs:
        parent = nodes.get(job.parent) if job.parent is not None else None
        # A missing parent or one that would close a cycle makes the job a root rather than vanish.
        if parent is None or parent is nodes[job.id] or _is_ancestor(nodes, job.id, job.parent):
            roots.append(nodes[job.id])
        else:
            parent.children.append(nodes[job.id])
    return roots


def _is_ancestor(nodes: dict, candidate: int, start: int | None) -> bool:
    seen = set()
    current = start
    while current is not None and current not in seen and current in nodes:
        if current == candidate:
            return True
        seen.add(current)
        current = nodes[current].job.parent
    return False


class _SourceReader:
    """Reads generated sources once each, within a total budget (see the module doc)."""

    def __init__(self, roots: list[Path], policy: str):
        self.roots, self.policy = roots, policy
        self.used = 0
        self.cache: dict[str, tuple[str | None, str]] = {}

    def view(self, mode: str, value, state: str) -> SourceView:
        value = str(value)
        if "\n" in value:                               # the record carries the source text itself
            return SourceView(mode, "(inline)", *self._limit(value))
        embed = self.policy == "all" or (self.policy == "failures" and state not in QUIET)
        if not embed:                                   # say why the disclosure holds no text
            why = ("not embedded: this report embeds no sources" if self.policy == "none" else
                   "not embedded for a passing run, to keep the report small: open the file, or "
                   "`harness report RESULTS --embed-sources all` embeds every run's")
            return SourceView(mode, value, None, why)
        if value not in self.cache:
            self.cache[value] = self._read(value)
        text, note = self.cache[value]
        return SourceView(mode, value, text, note)

    def _read(self, value: str) -> tuple[str | None, str]:
        # Results may come from elsewhere (a CI artifact, an untrusted file): a record names a
        # generated file, and only its name is used, looked up in the generated-sources
        # directories (content-addressed names), so a record cannot make the report embed any
        # other local file. Symlinks are not followed.
        name = Path(value).name
        if Path(name).suffix.lower() not in _SOURCE_SUFFIXES or not _GENERATED_NAME.fullmatch(name):
            return None, f"not embedded: only generated {', '.join(sorted(_SOURCE_SUFFIXES))} files are"
        for folder in generated_source_dirs(self.roots):    # the adapters' folders too
            candidate = folder / name
            try:
                if not stat.S_ISREG(os.lstat(candidate).st_mode):
                    continue
                with open(candidate, encoding="utf-8", errors="replace") as fh:
                    return self._limit(fh.read(_SOURCE_EMBED_LIMIT + 1))
            except OSError:
                continue
        return None, "not found in the generated-sources directory when the report was built"

    def _limit(self, text: str) -> tuple[str | None, str]:
        if self.used >= _SOURCE_TOTAL_LIMIT:
            return None, "not embedded: the report's source budget is spent"
        note = ""
        if len(text) > _SOURCE_EMBED_LIMIT:
            text, note = text[:_SOURCE_EMBED_LIMIT], f"cut at {_SOURCE_EMBED_LIMIT} characters"
        self.used += len(text)
        return text, note


def _worst_blocks(outcome: Outcome) -> list[tuple[OracleVerdict, Markup | None]]:
    """Each oracle that localized entries, with an AD-vs-FD scatter when it is about a failure."""
    blocks = []
    for oracle in outcome.oracles:
        if oracle.worst:
            failing = oracle.verdict == "fail" or outcome.state in _PLOT_STATES
            labels = pair_labels(oracle.name)
            blocks.append((oracle, svg.scatter_ad_fd(oracle.worst, labels=labels) if failing else None))
    return blocks


def _step_plots(outcome: Outcome) -> dict:
    """Each oracle's finite-difference refinement stages as a plot, where it recorded two or more."""
    plots = {}
    for oracle in outcome.oracles:
        plot = step_plot(oracle.metrics) if isinstance(oracle.metrics, dict) else None
        if plot is not None:
            plots[oracle.name] = plot
    return plots


def states_per_column(outcomes: Iterable[Outcome], columns: list[MatrixColumn]) -> Markup:
    """The chart at the top of the report: one bar per matrix column (engine, backend, mode)."""
    counts: dict[tuple, Counter] = defaultdict(Counter)
    for outcome in outcomes:
        counts[matrix_column_of(outcome).key][outcome.state] += 1
    return state_bars((f"{c.engine} \u00b7 {c.backend} \u00b7 {c.mode}", counts[c.key]) for c in columns)


def _ptx_facts(ptx: dict) -> list[str]:
    facts: dict[str, None] = {}
    for values in ptx.values():
        if isinstance(values, dict):
            facts.update(dict.fromkeys(values))
    return list(facts)


def build_view(outcomes: Iterable[Outcome], *, metas: Iterable[tuple[str, dict]] = (),
               baseline: Iterable[Outcome] | None = None, bench: list[dict] | None = None,
               rules: list[CategoryRule] | None = None, title: str = "GPU AD compatibility report",
               source_roots: Iterable[Path] = (), embed_sources: str = "failures",
               warnings: Iterable[str] = ()) -> ReportView:
    rules = load_rules() if rules is None else rules
    latest = list(latest_by_key(outcomes).values())
    category_of: Callable[[Outcome], str | None] = lambda o: categorize_outcome(o, rules)
    sources = _SourceReader([Path(p) for p in source_roots] or [Path.cwd()], embed_sources)

    by_case: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in latest:
        by_case[outcome.case_id or outcome.source].append(outcome)
    columns = sorted({matrix_column_of(o) for o in latest}, key=_matrix_column_sort_key)
    column_index = {column.key: i for i, column in enumerate(columns)}

    cases: list[CaseView] = []
    for case_id, runs in by_case.items():
        runs.sort(key=lambda o: _column_sort_key(column_of(o)))
        first = runs[0]
        case = CaseView(case_id=case_id, anchor="case-" + slug(case_id),
                        group=first.tags[0] if first.tags else "(untagged)",
                        title=first.title, description=getattr(first, "description", "") or "",
                        source=first.source, kernel=first.kernel, tags=list(first.tags),
                        links=[LinkView(str(link), safe_href(str(link))) for link in first.links],
                        args=list(first.args), runs=[])
        for outcome in runs:
            case.runs.append(RunView(
                outcome=outcome, anchor=run_anchor(outcome), column=column_of(outcome),
                category=category_of(outcome), worst_blocks=_worst_blocks(outcome),
                job_tree=_job_tree(outcome.jobs), ptx_facts=_ptx_facts(outcome.ptx),
                sources=[sources.view(mode, path, outcome.state) for mode, path in outcome.sources.items()],
                args_differ=outcome.args != case.args, step_plots=_step_plots(outcome)))
        rows: dict[str, MatrixRow] = {}
        for run in case.runs:               # sorted: base first, then variants; dtypes in order
            row = rows.get(run.column.variant)
            if row is None:
                row = rows[run.column.variant] = MatrixRow(run.column.variant, [[] for _ in columns])
            row.cells[column_index[matrix_column_of(run.outcome).key]].append(run)
        case.rows = list(rows.values())
        cases.append(case)

    groups: dict[str, list[CaseView]] = defaultdict(list)
    for case in sorted(cases, key=lambda c: c.case_id):
        groups[case.group].append(case)
    ordered_groups = sorted(groups.items(), key=lambda item: (item[0] == "(untagged)", item[0]))

    counts = Counter(o.state for o in latest)
    state_counts = [(s, counts[s]) for s in STATES if counts[s]]
    state_counts += [(s, n) for s, n in sorted(counts.items()) if s not in STATES]

    by_category: dict[str, list[RunView]] = defaultdict(list)
    for case in cases:
        for run in case.runs:
            if run.category is not None:
                by_category[run.category].append(run)

    comparison = None
    if baseline is not None:
        comparison = compare(baseline, latest, category_of)
    return ReportView(
        title=title,
        generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        total_runs=len(latest), state_counts=state_counts, columns=columns,
        groups=ordered_groups, cases=[c for _, group in ordered_groups for c in group],
        tags=sorted({t for o in latest for t in o.tags}),
        categories=sorted(by_category.items(), key=lambda item: (-len(item[1]), item[0])),
        comparison=comparison, anchors={run_key(o): run_anchor(o) for o in latest},
        metas=[(shown_path(path, sources.roots), meta) for path, meta in metas], bench=svg.bar_charts(bench or []), warnings=list(warnings),
        path_prefixes=path_prefixes(sources.roots), state_chart=states_per_column(latest, columns))


def shown_path(path: str, roots: Iterable[Path]) -> str:
    """A results file's path as the report shows it: relative to a project root when under one,
    else its name alone (never an absolute path of the machine that built the report)."""
    candidate = Path(path)
    if not candidate.is_absolute():
        return path
    roots = list(roots)
    # a project folder (one with cases/) first: results in its reports/ read reports/results.jsonl
    roots.sort(key=lambda root: not (Path(root) / "cases").is_dir())
    for root in roots:
        for form in (Path(root), Path(root).resolve()):
            if len(form.parts) >= 3 and candidate.is_relative_to(form):
                return str(candidate.relative_to(form))
    return candidate.name


def path_prefixes(roots: Iterable[Path]) -> list[tuple[str, str]]:
    """(absolute prefix, what replaces it) for the folders whose paths a report must not show:
    the project (its paths become project-relative), the Python installation and the home folder.
    Folders with fewer than two parts below / are left alone (they would eat into URLs)."""
    pairs: dict[str, str] = {}
    for root in roots:
        for form in {str(Path(root)), str(Path(root).resolve())}:
            if Path(form).is_absolute() and len(Path(form).parts) >= 3:
                pairs.setdefault(form.rstrip("/") + "/", "")
    cache = os.environ.get("HARNESS_CACHE_DIR")
    if cache and Path(cache).is_absolute() and len(Path(cache).parts) >= 3:
        pairs.setdefault(str(Path(cache)).rstrip("/") + "/", "<HARNESS_CACHE_DIR>/")
    for prefix, label in ((sys.prefix, "<python>"), (sys.base_prefix, "<python>"),
                          (os.path.expanduser("~"), "~")):
        if prefix and len(Path(prefix).parts) >= 3:
            pairs.setdefault(str(Path(prefix)).rstrip("/") + "/", f"{label}/")
    return sorted(pairs.items(), key=lambda item: -len(item[0]))


def local_paths_removed(html: str, prefixes: list[tuple[str, str]]) -> str:
    """The page without the absolute paths of the machine that built it: a report is read
    elsewhere (a CI artifact), and paths under the project mean the same there relative."""
    for prefix, replacement in prefixes:
        html = html.replace(prefix, replacement)
    return html


# ----------------------------------------------------------------------------- rendering

def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(num=fmt_number, seconds=fmt_seconds, kv=fmt_mapping, slug=slug,
                       timings=fmt_timings, oracle_line=oracle_line, jobs_line=jobs_line,
                       ptx_line=ptx_line, pair_labels=pair_labels, plural=plural,
                       tojson_text=lambda v: json.dumps(v, default=str, ensure_ascii=False))
    env.globals.update(is_mapping=lambda v: isinstance(v, dict), shown_metrics=shown_metrics)
    return env


# process-wide: the templates of the installed package, loaded once; rendering keeps no state in it
_ENV: jinja2.Environment | None = None


@dataclass(frozen=True)
class _Assets:
    css: Markup
    script: Markup
    script_hash: str              # CSP source for the one inline script the page may run


def _assets() -> _Assets:
    css = (TEMPLATES_DIR / "report.css").read_text(encoding="utf-8")
    script = (TEMPLATES_DIR / "report.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return _Assets(Markup(css), Markup(script), f"sha256-{digest}")


def render_view(view: ReportView) -> str:
    global _ENV
    if _ENV is None:
        _ENV = _environment()
    return local_paths_removed(_ENV.get_template("report.html.j2").render(r=view, assets=_assets()),
                               view.path_prefixes)


def render_html(outcomes: Iterable[Outcome], **options) -> str:
    """The whole page for these outcomes; options as for build_view."""
    return render_view(build_view(outcomes, **options))
