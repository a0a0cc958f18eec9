"""The report in a real browser: headless Chromium (Debian's package), driven from the command line.

No browser-automation package: `--dump-dom` returns the DOM after the page's own script ran (it
records its state and timings in data-* attributes on <html>), and `--screenshot` keeps a picture
under reports/screenshots/ for a person to look at.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.model import STATES, ErrorRecord
from harness.report import write_report
from harness.report.render import render_html, run_anchor
from harness.results.store import ResultsWriter

try:
    from test_report import outcome, synthetic_outcomes
except ImportError:                                      # tests/ collected as a package
    from tests.unit.test_report import outcome, synthetic_outcomes

CHROMIUM = Path("/usr/bin/chromium")
# Pictures for a person to look at; HARNESS_SCREENSHOTS puts them elsewhere.
SCREENSHOTS = Path(os.environ.get("HARNESS_SCREENSHOTS")
                   or Path(__file__).resolve().parents[2] / "reports" / "screenshots")
# Paint time of the 5,000-run report as a multiple of a 40-run report's, measured in the same run: the
# page draws its visible rows, not every run (625 rows against 5; drawing all 5,000 runs would be
# far above this), and a ratio holds on a loaded machine where an absolute budget (2 s) did not.
PAINT_RATIO_BUDGET = 30
SIZE_BUDGET = 10 * 1024 * 1024

if not CHROMIUM.exists():
    # Said at collection, not only in -rs output: a silently skipped browser test looks like a pass.
    warnings.warn(f"the report's browser tests are skipped: no {CHROMIUM} (apt-get install -y chromium)",
                  stacklevel=1)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                                     "(apt-get install -y chromium; .ci/run installs it)"),
]


def chromium(tmp_path: Path, url: str, *extra: str, timeout: float = 120) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    argv = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", *extra, url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    shutil.rmtree(profile, ignore_errors=True)
    return done.stdout


class DomFacts(HTMLParser):
    """What the tests read back from a dumped DOM: <html> attributes, matrix rows, open details."""

    def __init__(self, text: str):
        super().__init__()
        self.root: dict = {}
        self.rows: list[dict] = []
        self.open_details: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "html":
            self.root = attributes
        elif tag == "tr" and "data-case" in attributes:
            self.rows.append(attributes)
        elif tag == "details" and "open" in attributes and "id" in attributes:
            self.open_details.append(attributes["id"])


def file_url(path: Path, fragment: str = "") -> str:
    return path.resolve().as_uri() + (f"#{fragment}" if fragment else "")


@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory) -> tuple[Path, list]:
    """Every state, several tags, a hostile title and an error, as a real results file."""
    tmp = tmp_path_factory.mktemp("browser")
    runs = []
    for i, state in enumerate(STATES):
        for mode in ("forward", "reverse"):
            bad = state if mode == "reverse" else "PASS"
            runs.append(outcome(f"case-{i}", mode, bad, tags=[["broadcast", "nested", "atomics"][i % 3]],
                                worst=[("out[0]", 0.0, 1.5, 1.5, 1.0), ("out[1]", 2.0, 2.1, .1, .05)]
                                if bad in ("FAIL", "ZERO") else (),
                                error=ErrorRecord("KernelError", "argument 2 is not isbits <b>x</b>", None,
                                                  "Traceback ...") if bad == "ERROR" else None,
                                title="<script>alert(1)</script>" if i == 0 else f"case {i}"))
    results = tmp / "results.jsonl"
    with ResultsWriter(results) as writer:
        writer.write_meta({"backend": "sim", "seed": 0, "git_revision": "0" * 40})
        for run in runs:
            writer.append(run)
    html = tmp / "index.html"
    write_report([results], html)
    return html, runs


def test_matrix_renders_and_script_runs(mixed_report, tmp_path):
    html, runs = mixed_report
    facts = DomFacts(chromium(tmp_path, file_url(html), "--dump-dom"))
    assert facts.root.get("data-js") == "ready"                    # the inline script ran (CSP ok)
    cases = {o.case_id for o in runs}
    assert len(facts.rows) == len(cases)
    assert facts.root.get("data-shown-cases") == str(len(cases))   # counter computed by the script
    assert not any("hidden" in row for row in facts.rows)
    seen = {state for row in facts.rows for state in row["data-states"].split()}
    assert seen == set(STATES)

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / "report.png"
    shot.unlink(missing_ok=True)
    chromium(tmp_path, file_url(html), f"--screenshot={shot}", "--window-size=1400,1000")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_state_filter_from_url_hash(mixed_report, tmp_path):
    html, runs = mixed_report
    facts = DomFacts(chromium(tmp_path, file_url(html, "filter=FAIL"), "--dump-dom"))
    assert facts.root.get("data-filter") == "FAIL"
    visible = [row for row in facts.rows if "hidden" not in row]
    failing_cases = {o.case_id for o in runs if o.state == "FAIL"}
    assert {row["data-id"] for row in visible} == failing_cases
    assert all("FAIL" in row["data-states"].split() for row in visible)
    assert facts.root.get("data-shown-cases") == str(len(failing_cases))

    tagged = DomFacts(chromium(tmp_path, file_url(html, "tag=nested&q=case-1"), "--dump-dom"))
    assert [row["data-id"] for row in tagged.rows if "hidden" not in row] == ["case-1"]


def test_sort_failures_first(mixed_report, tmp_path):
    html, _ = mixed_report
    default = DomFacts(chromium(tmp_path, file_url(html), "--dump-dom"))
    ordered = DomFacts(chromium(tmp_path, file_url(html, "sort=bad"), "--dump-dom"))
    group = lambda facts: [r["data-id"] for r in facts.rows if r["data-tags"] == "broadcast"]  # noqa: E731
    assert group(default) == ["case-0", "case-3", "case-6"]
    assert group(ordered) == ["case-3", "case-6", "case-0"]      # case-0 only passes


def test_detail_opens_from_link(mixed_report, tmp_path):
    html, runs = mixed_report
    failing = next(o for o in runs if o.state == "FAIL")
    anchor = run_anchor(failing)
    assert f'href="#{anchor}"' in html.read_text()                # the matrix cell links to it
    facts = DomFacts(chromium(tmp_path, file_url(html, anchor), "--dump-dom"))
    assert anchor in facts.open_details                            # the run's detail is opened
    assert any(d.startswith(f"case-{failing.case_id}-") for d in facts.open_details)  # and its case

    # a view link with open= scrolls to the run, after filtering
    facts = DomFacts(chromium(tmp_path, file_url(html, f"q={failing.case_id}&open={anchor}"), "--dump-dom"))
    assert anchor in facts.open_details and facts.root.get("data-scrolled-to") == anchor

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / "report-detail.png"
    chromium(tmp_path, file_url(html, f"q={failing.case_id}&open={anchor}"),
             f"--screenshot={shot}", "--window-size=1400,1000")
    assert shot.stat().st_size > 0


def synthetic_report(tmp_path: Path, runs: int) -> Path:
    """The HTML report of `runs` synthetic outcomes, written under tmp_path."""
    results = tmp_path / f"results-{runs}.jsonl"
    with ResultsWriter(results) as writer:
        for run in synthetic_outcomes(runs):
            writer.append(run)
    html = tmp_path / f"report-{runs}.html"
    write_report([results], html)
    return html


def test_5000_runs_paint_within_budget(tmp_path):
    html = synthetic_report(tmp_path, 5000)
    size = html.stat().st_size
    small = synthetic_report(tmp_path, 40)

    def paint_ms(page: Path, rows: int) -> float:
        facts = DomFacts(chromium(tmp_path, file_url(page), "--dump-dom"))
        assert facts.root.get("data-js") == "ready" and len(facts.rows) == rows
        return float(facts.root.get("data-paint-ms") or facts.root["data-load-ms"])
    # Best of three, interleaved, so both pages see the same moments of this shared machine.
    pairs = [(paint_ms(small, 5), paint_ms(html, 625)) for _ in range(3)]
    small_ms, big_ms = min(p[0] for p in pairs), min(p[1] for p in pairs)
    print(f"\n5000-run report: {size / 1e6:.2f} MB, paint {big_ms:.0f} ms; 40-run report {small_ms:.0f} ms "
          f"(ratio {big_ms / small_ms:.1f})")
    if os.environ.get("HARNESS_KEEP_SCALE_REPORT"):
        shutil.copy(html, SCREENSHOTS.parent / "scale-5000.html")
    assert size < SIZE_BUDGET
    assert big_ms / small_ms < PAINT_RATIO_BUDGET


def wide_matrix_outcomes() -> list:
    """A suite as the adapters make it: three engines on two backends, three modes, two dtypes and
    variants, with failures in the rightmost columns (where an 89-column matrix hid them)."""
    runs = []
    engines, backends = ("bundled", "warp", "taichi"), ("sim", "cuda")
    for i in range(24):
        for engine in engines:
            for backend in backends:
                for mode in ("primal", "forward", "reverse"):
                    for dtype in ("float32", "float64"):
                        for variant in ((None, "packed") if i % 4 == 0 else (None,)):
                            last = engine == engines[-1] and backend == backends[-1] and mode == "reverse"
                            state = ("FAIL", "NONDET", "ERROR", "ZERO", "XPASS")[i % 5] if last and i % 3 == 0 \
                                else ("UNSUPPORTED" if engine == "taichi" and i % 7 == 0 else "PASS")
                            run = outcome(f"case-{i:02d}-a-rather-long-case-name", mode, state, dtype=dtype,
                                          backend=backend, variant=variant, tags=[("atomics", "broadcast", "loops")[i % 3]],
                                          error=ErrorRecord("KernelError", "boom") if state == "ERROR" else None)
                            run.engine = engine
                            runs.append(run)
    return runs


def test_matrix_shows_every_failure_at_1400_px_without_scrolling(tmp_path):
    runs = wide_matrix_outcomes()
    html = tmp_path / "wide.html"
    html.write_text(render_html(runs), encoding="utf-8")
    facts = DomFacts(chromium(tmp_path, file_url(html), "--dump-dom", "--window-size=1400,1000"))
    assert facts.root.get("data-js") == "ready"
    bad = sum(1 for o in runs if o.state in ("FAIL", "NONDET", "ERROR", "ZERO", "XPASS"))
    assert int(facts.root["data-bad-chips"]) == bad
    assert facts.root["data-bad-chips-offscreen"] == "0"
    assert facts.root["data-matrix-overflow-px"] == "0"

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, fragment in (("matrix-1400.png", ""), ("matrix-1400-failures.png", "filter=FAIL,NONDET,ERROR,ZERO,XPASS")):
        shot = SCREENSHOTS / name
        chromium(tmp_path, file_url(html, fragment), f"--screenshot={shot}", "--window-size=1400,1000")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_variant_sub_rows_follow_their_case_when_sorted_and_filtered(tmp_path):
    runs = wide_matrix_outcomes()
    html = tmp_path / "wide.html"
    html.write_text(render_html(runs), encoding="utf-8")
    dom = chromium(tmp_path, file_url(html, "sort=bad&filter=FAIL"), "--dump-dom")
    order = re.findall(r'<tr (?:data-case="" data-id|class="sub" data-parent)="([^"]+)"([^>]*)>', dom)
    for position, (case_id, attributes) in enumerate(order):
        if "data-order" not in attributes:                       # a sub-row: right after its case
            assert order[position - 1][0] == case_id
    hidden = {case for case, attributes in order if "hidden" in attributes}
    shown = {case for case, attributes in order if "hidden" not in attributes}
    assert shown and hidden and not shown & hidden               # a case and its sub-rows together


# ----------------------------------------------------------------------------- plots, measured in the browser

# Measures every <svg> of the page after layout: each text's box must lie inside its svg's box (a
# label cut at the edge, like `03116` for 0.03116, is outside it), and says what was drawn.
_FIT_SCRIPT = """
var out = [];
document.querySelectorAll('svg').forEach(function (svg) {
  var box = svg.getBoundingClientRect(), clipped = [];
  svg.querySelectorAll('text').forEach(function (t) {
    var r = t.getBoundingClientRect();
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
      clipped.push(t.textContent);
  });
  out.push({id: svg.id, texts: Array.prototype.map.call(svg.querySelectorAll('text'), function (t) { return t.textContent; }),
            circles: svg.querySelectorAll('circle').length, clipped: clipped});
});
document.documentElement.setAttribute('data-fit', JSON.stringify(out));
"""


def measured_svgs(tmp_path: Path, svgs: list[str], css: str | None = None) -> list[dict]:
    """Each svg as the browser lays it out, with the report's stylesheet (its font sizes)."""
    import json
    from harness.report.render import TEMPLATES_DIR
    css = css if css is not None else (TEMPLATES_DIR / "report.css").read_text(encoding="utf-8")
    page = tmp_path / f"svgs-{len(list(tmp_path.glob('svgs-*')))}.html"
    page.write_text(f"<!doctype html><html><head><meta charset='utf-8'><style>{css}</style></head><body>"
                    + "".join(f"<div>{s}</div>" for s in svgs) + f"<script>{_FIT_SCRIPT}</script></body></html>",
                    encoding="utf-8")
    facts = DomFacts(chromium(tmp_path, file_url(page), "--dump-dom"))
    return json.loads(facts.root["data-fit"])


def test_scatter_labels_are_whole_and_coincident_points_counted(tmp_path):
    from harness.model import WorstEntry
    from harness.report.svg import scatter_ad_fd
    equal = [WorstEntry(f"out[{i}]", 0.03116, 0.03116, 0.0, 0.0) for i in range(8)]
    small = scatter_ad_fd(equal + [WorstEntry("out[8]", 0.0312, 0.0305, 7e-4, 0.02)])
    wide = scatter_ad_fd([WorstEntry("a", -123456.7, 0.001234, 1, 1), WorstEntry("b", 2.5e-7, 98765.4, 1, 1)])
    first, second = measured_svgs(tmp_path, [small, wide])
    assert first["clipped"] == [] and second["clipped"] == []
    assert first["circles"] == 2 and "\u00d78" in first["texts"]          # eight equal points, drawn once, counted
    assert any(t.startswith("0.03") and len(t) >= 6 for t in first["texts"])   # a whole tick label
    assert second["circles"] == 2 and not any(t.startswith("\u00d7") for t in second["texts"])


def test_step_refinement_plot_fits_and_names_its_stages(tmp_path):
    from harness.report.step_plot import step_plot
    metrics = {"stages": {"central": 31.5, "richardson": 30.9, "large-step": 0.4},
               "h": [1.2e-3, 9.5e-4], "h_large": [0.0625]}
    plot = step_plot(metrics)
    [fit] = measured_svgs(tmp_path, [plot])
    assert fit["clipped"] == []
    assert fit["circles"] == 3
    assert {"central", "richardson", "large-step", "step", "error / tol"} <= set(fit["texts"])


def test_report_opens_with_states_per_engine_and_mode(tmp_path):
    runs = wide_matrix_outcomes()
    html = tmp_path / "wide.html"
    html.write_text(render_html(runs), encoding="utf-8")
    text = html.read_text()
    assert text.index('id="states-chart"') < text.index('id="matrix"')     # at the top
    chart = text[text.index('<svg class="states"'):]
    chart = chart[:chart.index("</svg>") + 6]
    [fit] = measured_svgs(tmp_path, [chart])
    assert fit["clipped"] == []
    # one bar per engine, backend and mode, with its total at its end
    labels = [t for t in fit["texts"] if " \u00b7 " in t]
    assert len(labels) == 3 * 2 * 3 and "taichi \u00b7 cuda \u00b7 reverse" in labels
    per_column = Counter(f"{o.engine} \u00b7 {o.backend} \u00b7 {o.mode}" for o in runs)
    assert set(per_column) == set(labels)
    assert str(per_column["taichi \u00b7 cuda \u00b7 reverse"]) in fit["texts"]
    failing = sum(o.state == "FAIL" and (o.engine, o.backend, o.mode) == ("taichi", "cuda", "reverse") for o in runs)
    assert f"taichi \u00b7 cuda \u00b7 reverse: {failing} FAIL" in chart                # the segment's tooltip

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / "report-states.png"
    chromium(tmp_path, file_url(html), f"--screenshot={shot}", "--window-size=1400,1000")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_release_chart_fits_its_labels(tmp_path):
    from harness.releases.matrix import build_matrix
    from harness.releases.page import render
    versions = ["1.5.1", "1.10.1", "1.19.0", "1.20.0rc1"]
    by_version = {}
    for k, v in enumerate(versions):
        runs = [outcome(f"case-{i}", "reverse", ("PASS", "FAIL", "XFAIL", "UNSUPPORTED")[(i + k) % 4])
                for i in range(600)]
        for run in runs:
            run.engine, run.engine_version = "warp", v
        by_version[v] = runs
    page = tmp_path / "releases.html"
    page.write_text(render(build_matrix("warp", by_version, {}), "harness releases warp ..."), encoding="utf-8")
    chart = page.read_text()
    chart = chart[chart.index("<svg"):chart.index("</svg>") + 6]
    [fit] = measured_svgs(tmp_path, [chart])
    assert fit["clipped"] == []
    assert set(versions) <= set(fit["texts"]) and "600" in fit["texts"]
