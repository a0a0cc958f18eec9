"""The HTML report: categories, baseline comparison, rendering, escaping, CLI and scale."""
from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from harness.cli import main
from harness.model import STATES, ErrorRecord, JobRecord, OracleVerdict, Outcome, WorstEntry
from harness.report import build_report, summary_line, write_report
from harness.report.categories import (CategoryConfigError, UNCATEGORIZED, categorize,
                                       categorize_outcome, load_rules, parse_rules)
from harness.report.compare import compare
from harness.report.render import render_html, safe_href
from harness.report.svg import bar_charts, scatter_ad_fd
from harness.results.store import ResultsWriter

EVIL = "<script>alert(1)</script>"


# ----------------------------------------------------------------------------- synthetic data

def outcome(case: str = "c0", mode: str = "reverse", state: str = "PASS", *, dtype: str | None = "float32",
            backend: str = "sim", variant: str | None = None, tags=("broadcast",), error=None,
            worst=(), **extra) -> Outcome:
    name = "-".join(p for p in (variant, mode, dtype) if p)
    fields = dict(
        run_id=f"cases/{case}.yaml::{name}", case_id=case, source=f"cases/{case}.yaml", variant=variant,
        mode=mode, dtype=dtype, backend=backend, state=state,
        message="" if state == "PASS" else f"{state.lower()} in {mode}", title=f"title of {case}",
        tags=list(tags), links=[f"https://example.org/{case}"], kernel="kernels/k.py:add",
        args=[{"name": "out", "kind": "array", "activity": "duplicated", "shape": [256], "dtype": "float32"},
              {"name": "x", "kind": "array", "activity": "const", "shape": [256], "dtype": "float32"}],
        oracles=[OracleVerdict("fd-" + mode, "fail" if worst else "pass", "", {"rtol": 2e-3, "err": 0.1},
                               [WorstEntry(*w) for w in worst]),
                 OracleVerdict("dot", "pass", "", {"rel": 1e-7})],
        error=error, jobs=[JobRecord(1, "add", mode, "sim", {"fastmath": False})],
        ptx={"add_rev": {"atomics": 0, "local_memory": 0}}, timings={"compile": 0.2, "launch": 0.09},
        repro=f"pytest cases/{case}.yaml -k {name}", duration=0.3)
    fields.update(extra)
    return Outcome(**fields)


def synthetic_outcomes(n: int, seed: int = 0) -> list[Outcome]:
    """n runs shaped like a real suite: 8 configurations per case, ~12% not passing."""
    rng = random.Random(seed)
    configs = [(m, d, b) for m in ("forward", "reverse") for d in ("float32", "float64") for b in ("sim", "ptx")]
    tags = ["broadcast", "activity", "nested", "atomics", "shared", "loops", "warp", "seed"]
    weights = {"PASS": 88, "FAIL": 3, "ZERO": 2, "NONDET": 1, "ERROR": 2, "XFAIL": 2, "XPASS": 0.5,
               "UNSUPPORTED": 1, "SKIP": 0.5}
    runs = []
    for i in range(n):
        case, (mode, dtype, backend) = f"case-{i // len(configs):04d}", configs[i % len(configs)]
        state = rng.choices(list(weights), list(weights.values()))[0]
        worst = [(f"out[{k}]", rng.uniform(-1, 1), rng.uniform(-1, 1), 0.5, 0.4) for k in range(5)] \
            if state in ("FAIL", "ZERO", "XFAIL") else ()
        error = None
        if state == "ERROR":
            error = ErrorRecord(rng.choice(["KernelError", "TypingError", "LaunchTimeoutError"]),
                                "argument 1 is not isbits: <class 'numpy.dtype'>",
                                None, "Traceback (most recent call last):\n" + "  File \"x.py\", line 1\n" * 20)
        runs.append(outcome(case, mode, state, dtype=dtype, backend=backend, error=error, worst=worst,
                            tags=[tags[(i // len(configs)) % len(tags)]],
                            sources={mode: f"build/generated/{case}_{mode}.py"}))
    return runs


# ----------------------------------------------------------------------------- categories

@pytest.fixture(scope="module")
def rules():
    return load_rules()


@pytest.mark.parametrize("error_type, message, expected", [
    ("KernelError", "argument 2 (numpy.float64) is not isbits", "non-isbits argument"),
    ("MixedActivityError", "packed argument mixes x (const) and y (duplicated)", "mixed activity"),
    ("NestedCompilationError", "f compiled for host, parent df for cuda", "nested compilation target"),
    ("UnsupportedError", "kernels/a.py:12: while loop with carried value", "unsupported construct"),
    ("LaunchTimeoutError", "launch exceeded 30 s", "timeout"),
    ("CudaAPIError", "[700] Call to cuCtxSynchronize results in CUDA_ERROR_ILLEGAL_ADDRESS", "device fault / illegal address"),
    ("CaseError", "cases/a.yaml:3: key 'argz': unknown key", "case file error"),
    ("TypingError", "Failed in cuda mode pipeline", "compile error"),
    ("NONDET", "reverse differs between repeats by 1e-3", "race / nondeterminism"),
    ("ZERO", "gradient of x is all zero, FD is not", "silent zero gradient"),
    ("FAIL", "fd-reverse: rel err 0.5", "wrong gradient"),
    ("XPASS", "", "unexpected pass"),
    ("ValueError", "something else entirely", UNCATEGORIZED),
])
def test_bundled_rules(rules, error_type, message, expected):
    assert categorize(error_type, message, rules) == expected


def test_first_matching_rule_wins():
    custom = parse_rules({"rules": [{"name": "first", "message": "boom"},
                                    {"name": "second", "type": "^Err$", "message": "boom"}]})
    assert categorize("Err", "a boom", custom) == "first"
    assert categorize("Err", "quiet", custom) == UNCATEGORIZED
    both = parse_rules([{"name": "both", "type": "^Err$", "message": "boom"}])
    assert categorize("Other", "boom", both) == UNCATEGORIZED        # both keys must match


def test_outcome_categories(rules):
    assert categorize_outcome(outcome(state="PASS"), rules) is None
    assert categorize_outcome(outcome(state="ZERO"), rules) == "silent zero gradient"
    stored = outcome(state="ERROR", error=ErrorRecord("WeirdError", "?", category="driver"))
    assert categorize_outcome(stored, rules) == "driver"               # fallback to the record's
    ruled = outcome(state="ERROR", error=ErrorRecord("MixedActivityError", "?", category="driver"))
    assert categorize_outcome(ruled, rules) == "mixed activity"        # rules win


def test_tolerance_failure_is_a_wrong_gradient_whatever_its_message(rules):
    # an FD tolerance failure was filed under race / nondeterminism for its wording
    worded = outcome(state="FAIL", message="fd-reverse: differs between repeats of the race-free sum; "
                                           "|err| 0.3 > tol 1e-5")
    assert categorize_outcome(worded, rules) == "wrong gradient"
    known_race = outcome(state="XFAIL", message="known bug (lost updates): nondet: 3 launches disagree",
                         oracles=[OracleVerdict("nondet", "fail", "3 launches disagree")])
    assert categorize_outcome(known_race, rules) == "race / nondeterminism"
    known_wrong = outcome(state="XFAIL", message="known bug (race in the original): fd-reverse: |err| 2",
                          oracles=[OracleVerdict("fd-reverse", "fail", "|err| 2")])
    assert categorize_outcome(known_wrong, rules) == "wrong gradient"
    raced = outcome(state="ERROR", error=ErrorRecord("RuntimeError", "a data race between threads"))
    assert categorize_outcome(raced, rules) == "race / nondeterminism"    # errors keep message rules


def test_passing_runs_are_never_categorized(rules):
    expected_error = outcome("e", state="PASS", error=ErrorRecord("KernelError", "argument 1 is not isbits"))
    refused = outcome("u", state="UNSUPPORTED", error=ErrorRecord("UnsupportedError", "lgamma has no rule"))
    failing = outcome("f", state="FAIL", worst=[("out[0]", 0.0, 1.0, 1.0, 1.0)])
    for run in (expected_error, refused):
        assert categorize_outcome(run, rules) is None
    html = render_html([expected_error, refused, failing])
    categories = html[html.index('id="categories"'):html.index('id="metadata"')]
    assert "wrong gradient" in categories and "cases/f.yaml" in categories
    assert "cases/e.yaml" not in categories and "cases/u.yaml" not in categories


def test_worst_entries_are_labelled_by_what_the_oracle_compares():
    run = outcome("d", state="FAIL", oracles=[
        OracleVerdict("dot", "fail", "", {}, [WorstEntry("dir 0", 1.0, 2.0, 1.0, 0.5)]),
        OracleVerdict("nondet", "fail", "", {}, [WorstEntry("out[3] (repeat)", 1.0, 1.5, .5, .3)]),
        OracleVerdict("fd-reverse", "fail", "", {}, [WorstEntry("x[0]", 1.0, 3.0, 2.0, .6)])])
    html = render_html([run])
    tables = re.findall(r"<caption>worst entries: ([\w-]+)</caption><tr><th>index</th><th>([^<]*)</th><th>([^<]*)</th>",
                        html)
    assert tables == [("dot", "reverse &lt;J^T w, v&gt;", "forward &lt;w, J v&gt;"),
                      ("nondet", "one launch", "another launch"), ("fd-reverse", "AD", "FD")]
    assert "<figcaption>one launch vs another launch: nondet</figcaption>" in html


def test_no_absolute_paths_of_the_building_machine(tmp_path, monkeypatch):
    project = tmp_path / "project"
    generated = project / ".cache" / "harness" / "generated" / "add__reverse_0123.py"
    generated.parent.mkdir(parents=True)
    generated.write_text("def add__reverse(): pass\n")
    (project / "reports").mkdir()
    (project / "cases").mkdir()
    failing = outcome("a", state="FAIL", worst=[("out[0]", 0.0, 1.0, 1.0, 1.0)],
                      sources={"reverse": str(generated)},
                      jobs=[JobRecord(1, "add", "reverse", "sim", {}, source=str(generated))],
                      error=ErrorRecord("ValueError", f"bad value in {project}/kernels/k.py",
                                        traceback=f'  File "{project}/harness/execution/runner.py", line 9\n'))
    passing = outcome("b", "forward", sources={"forward": str(generated)})
    results = project / "reports" / "results.jsonl"
    with ResultsWriter(results) as w:
        w.write_meta({"backend": "sim"})
        w.append(failing)
        w.append(passing)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = project / "reports" / "index.html"
    write_report([results], out)
    html = out.read_text()
    assert str(tmp_path) not in html
    assert "def add__reverse" in html                              # still found and embedded
    assert ".cache/harness/generated/add__reverse_0123.py" in html  # shown project-relative
    assert "File &#34;harness/execution/runner.py&#34;" in html and "bad value in kernels/k.py" in html
    assert "<code>reports/results.jsonl</code>" in html


def test_passing_run_names_its_generated_kernel():
    html = render_html([outcome("p", "forward", sources={"forward": ".cache/harness/generated/p__forward_1.py"}),
                        outcome("q", "forward", sources={}, error=ErrorRecord("KernelError", "not isbits"))])
    assert "generated kernel (forward): .cache/harness/generated/p__forward_1.py" in html
    assert "generated kernel: none (the run raised before code generation: KernelError)" in html


def test_counts_are_singular_for_one():
    html = render_html([outcome("only", "forward")])
    assert "1 run, 1 case, 1 configuration;" in html


@pytest.mark.parametrize("bad, fragment", [
    ({"rules": [{"name": "x", "typo": "y"}]}, "unknown key"),
    ({"rules": [{"name": "x", "type": "("}]}, "invalid regex"),
    ({"rules": [{"name": "x"}]}, "needs 'type' and/or 'message'"),
    ({"rulez": []}, "unknown top-level"),
])
def test_bad_rules_are_reported(bad, fragment):
    with pytest.raises(CategoryConfigError, match=re.escape(fragment)):
        parse_rules(bad, origin="cats.yaml")


# ----------------------------------------------------------------------------- compare

def test_compare_each_category():
    old = [outcome("a", state="PASS"), outcome("b", state="FAIL"), outcome("c", state="XFAIL"),
           outcome("d", state="ERROR", error=ErrorRecord("KernelError", "not isbits")),
           outcome("e", state="ERROR", error=ErrorRecord("KernelError", "not isbits")),
           outcome("f", state="PASS"), outcome("gone", state="PASS"), outcome("g", state="ZERO")]
    new = [outcome("a", state="FAIL"), outcome("b", state="PASS"), outcome("c", state="XPASS"),
           outcome("d", state="ERROR", error=ErrorRecord("TypingError", "bad")),
           outcome("e", state="ERROR", error=ErrorRecord("KernelError", "not isbits")),
           outcome("f", state="SKIP"), outcome("new", state="PASS"), outcome("g", state="PASS")]
    result = compare(old, new, lambda o: categorize_outcome(o, load_rules()))
    ids = lambda changes: sorted(c.run_id.split("/")[1].split(".")[0] for c in changes)  # noqa: E731
    assert ids(result.new_failures) == ["a", "c"]
    assert ids(result.newly_fixed) == ["b", "g"]
    assert ids(result.changed_errors) == ["d"]
    assert result.changed_errors[0].old_category == "non-isbits argument"
    assert result.changed_errors[0].new_category == "compile error"
    assert ids(result.other_changes) == ["f"]
    assert ids(result.added) == ["new"] and ids(result.removed) == ["gone"]
    assert result.unchanged == 1


def test_compare_keys_by_run_id_and_backend_latest_wins():
    old = [outcome("a", state="PASS", backend="sim"), outcome("a", state="PASS", backend="ptx")]
    new = [outcome("a", state="FAIL", backend="sim"), outcome("a", state="PASS", backend="sim"),
           outcome("a", state="ERROR", backend="ptx", error=ErrorRecord("NvvmError", "x"))]
    result = compare(old, new)
    assert [(c.backend, c.new_state) for c in result.new_failures] == [("ptx", "ERROR")]


def test_changed_category_with_same_type():
    old = [outcome("a", state="ERROR", error=ErrorRecord("CudaAPIError", "CUDA_ERROR_ILLEGAL_ADDRESS"))]
    new = [outcome("a", state="ERROR", error=ErrorRecord("CudaAPIError", "launch timed out"))]
    result = compare(old, new, lambda o: categorize_outcome(o, load_rules()))
    assert len(result.changed_errors) == 1


# ----------------------------------------------------------------------------- render

def test_every_state_has_its_class():
    runs = [outcome(f"c{i}", state=state, worst=[("out[0]", 0.0, 1.0, 1.0, 1.0)] if state == "FAIL" else ())
            for i, state in enumerate(STATES)]
    html = render_html(runs)
    for state in STATES:
        assert f'<a class="r s-{state}" href="#run-' in html, state
        assert f'class="st s-{state}">{state}</span>' in html
    assert html.count("<tr data-case") == len(STATES)
    assert '<svg class="plot"' in html                  # AD vs FD scatter of the failure
    assert "<script src" not in html and "<link" not in html and "@import" not in html


def test_case_supplied_text_is_escaped(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))     # sources come from there only
    source = tmp_path / "gen.py"
    source.write_text(f"def f_rev():\n    return '</pre>{EVIL}'\n")
    bad = outcome("evil", state="ERROR", title=EVIL,
                  links=["javascript:alert(1)", "JaVaScRiPt:alert(2)", f"https://ok.example/{EVIL}",
                         "https://good.example/issue/1"],
                  message=f"boom {EVIL}", tags=[EVIL],
                  error=ErrorRecord(f"Err{EVIL}", f"message {EVIL}", None, f"tb {EVIL}"),
                  worst=[(f"x[{EVIL}]", 0.0, 1.0, 1.0, 1.0)],
                  args=[{"name": EVIL, "kind": "array", "activity": "const", "shape": [1], "dtype": EVIL}],
                  jobs=[JobRecord(1, EVIL, "reverse", "cuda", {"k": EVIL})],
                  ptx={EVIL: {EVIL: EVIL}}, sources={"reverse": str(source)}, repro=f"pytest {EVIL}")
    html = render_html([bad], metas=[("r.jsonl", {"backend": EVIL, "versions": {"x": EVIL}})],
                       warnings=[EVIL])
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "</pre><script>" not in html and "&lt;/pre&gt;&lt;script&gt;" in html   # generated source
    assert 'href="javascript' not in html.lower()
    assert 'href="https://good.example/issue/1"' in html
    assert 'href="https://ok.example/' not in html      # a URL with markup characters stays text
    # The only <script> element is the page's own, allowed by its hash in the CSP.
    assert html.count("<script") == 1 and "script-src 'sha256-" in html


def test_safe_href():
    assert safe_href("https://github.com/a/b/issues/1") == "https://github.com/a/b/issues/1"
    assert safe_href("HTTP://x.org") == "HTTP://x.org"
    for bad in ("javascript:alert(1)", "data:text/html,x", "//evil.org", "file:///etc/passwd",
                'https://x.org/"onmouseover="alert(1)', "ftp://x"):
        assert safe_href(bad) is None, bad


def test_detail_sections_render(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))     # sources come from there only
    source = tmp_path / "f_rev.py"
    source.write_text("def f_rev(x, dx):\n    dx[0] += 2 * x[0]\n")
    parent = JobRecord(1, "df", "primal", "cuda", {"cc": "9.0"})
    child = JobRecord(2, "f", "reverse", "cuda", {"cc": "9.0"}, parent=1, parent_function="df", kernel=False)
    run = outcome("nest", state="FAIL", jobs=[parent, child], sources={"reverse": str(source)},
                  worst=[("A[0]", 0.0, 2.0, 2.0, 1.0), ("A[1]", float("nan"), 1.0, 1.0, 1.0)])
    html = render_html([run])
    assert re.search(r"<code>df</code>.*?<ul class=\"jobs\"><li><code>f</code>", html, re.S)
    assert "dx[0] += 2 * x[0]" in html and "<summary>generated kernel (reverse):" in html
    assert "<caption>PTX facts</caption>" in html and "local_memory" in html
    assert "worst entries: fd-reverse" in html and "1 non-finite not shown" in html
    assert "pytest cases/nest.yaml -k reverse-float32" in html
    assert "compile 200.0 ms" in html
    assert "wrong gradient" in html                       # category from the bundled rules


def with_engine(run: Outcome, engine: str) -> Outcome:
    run.engine = engine                 # the adapters' record field; older records have none
    return run


def test_matrix_columns_are_engine_backend_mode_with_dtypes_in_cells():
    runs = [outcome("a", "forward", tags=["zeta"]), outcome("a", "reverse", tags=["zeta"]),
            outcome("a", "reverse", dtype="float64", state="FAIL", tags=["zeta"]),
            outcome("a", "reverse", variant="packed", tags=["zeta"]),
            outcome("b", "reverse", variant="packed", dtype=None, backend="ptx", tags=[]),
            outcome("c", "forward", dtype="float64", tags=["alpha", "zeta"]),
            with_engine(outcome("c", "primal", dtype=None, tags=["alpha", "zeta"]), "warp")]
    html = render_html(runs)
    head = html[html.index('<table class="matrix">'):html.index("</thead>")]
    assert re.findall(r'<th colspan="(\d)">([^<]*)</th>', head) == [
        ("2", "bundled \u00b7 sim"), ("1", "bundled \u00b7 ptx"), ("1", "warp \u00b7 sim")]
    assert re.findall(r"<th>(primal|forward|reverse)</th>", head) == ["forward", "reverse", "reverse", "primal"]
    groups = re.findall(r'<tr class="grp"><th colspan="5">([^<]*)</th>', html)
    assert groups == ["alpha", "zeta", "(untagged)"]
    # case a: one row for the base configuration, a sub-row for its variant; dtypes inside the cell
    row_a = html[html.index('data-id="a"'):]
    row_a = row_a[:row_a.index('</tr>')]
    assert re.findall(r'class="r s-(\w+)"[^>]*>([^<]*)</a>', row_a) == [
        ("PASS", "f32 PASS"), ("PASS", "f32 PASS"), ("FAIL", "f64 FAIL")]
    assert '<tr class="sub" data-parent="a"><th><span class="var">\u21b3 packed</span>' in html
    # b has only a variant: its one row names it; a declared dtype shows just the state
    row_b = html[html.index('data-id="b"'):]
    assert '<span class="var">packed</span>' in row_b[:row_b.index('</tr>')]
    assert ">PASS</a>" in row_b[:row_b.index('</tr>')]


def test_matrix_stays_narrow_for_many_dtypes_and_variants():
    runs = [outcome(f"c{i}", mode, dtype=dtype, variant=variant)
            for i in range(3) for mode in ("forward", "reverse") for dtype in ("float32", "float64")
            for variant in (None, "v1", "v2", "v3")]
    html = render_html(runs)
    head = html[html.index('<table class="matrix">'):html.index("</thead>")]
    assert head.count("<th>forward</th>") == 1 and head.count("<th>reverse</th>") == 1


def test_svg_helpers():
    plot = scatter_ad_fd([WorstEntry(EVIL, 1.0, 1.0, 0.0, 0.0), WorstEntry("y", 2.0, 2.0, 0.0, 0.0)])
    assert plot.count("<circle") == 2 and "<script>" not in plot
    charts = dict(bar_charts([{"name": "fwd vs hand", "ratio": 1.1}, {"name": EVIL, "ratio": 0.9},
                              {"name": "copy", "value": 3.2, "unit": "TB/s"}, {"name": "bad"}]))
    assert set(charts) == {"x", "TB/s"} and 'class="ref"' in charts["x"]
    assert "<script>" not in charts["x"]


def test_build_report_with_baseline_and_bench(tmp_path):
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    with ResultsWriter(old) as w:
        w.write_meta({"backend": "sim", "seed": 0, "git_revision": "abc"})
        for o in (outcome("a"), outcome("b", state="FAIL")):
            w.append(o)
    with ResultsWriter(new) as w:
        w.write_meta({"backend": "sim", "seed": 0, "git_revision": "def"})
        for o in (outcome("a", state="ERROR", error=ErrorRecord("KernelError", "not isbits")), outcome("b")):
            w.append(o)
    bench = tmp_path / "bench.json"
    bench.write_text('[{"name": "reverse/handwritten", "ratio": 1.08, "unit": "x"}]')
    result = write_report([new], tmp_path / "r" / "index.html", baseline=[old], bench=bench)
    html = (tmp_path / "r" / "index.html").read_text()
    assert result.total_runs == 2 and result.state_counts == {"ERROR": 1, "PASS": 1}
    assert "New failures (1)" in html and "Newly fixed (1)" in html
    assert '<svg class="bars"' in html and "reverse/handwritten" in html
    assert "git_revision" in html and "def" in html


def test_cli_report(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    with ResultsWriter(results) as w:
        for n, state in enumerate(("PASS", "PASS", "XFAIL", "FAIL")):
            w.append(outcome(f"c{n}", state=state))
    out = tmp_path / "reports" / "index.html"
    assert main(["report", str(results), "-o", str(out), "--baseline", str(results)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"{out}: 4 runs on sim: 2 PASS, 1 FAIL, 1 XFAIL"
    assert lines[0].startswith("baseline: 0 new failures")
    assert out.is_file()
    assert main(["report", str(tmp_path / "missing.jsonl"), "-o", str(out)]) == 2
    assert "missing.jsonl" in capsys.readouterr().err


def test_cli_custom_categories(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    with ResultsWriter(results) as w:
        w.append(outcome("c", state="ERROR", error=ErrorRecord("KernelError", "not isbits")))
    cats = tmp_path / "cats.yaml"
    cats.write_text("rules:\n  - {name: my-bucket, type: Kernel}\n")
    out = tmp_path / "index.html"
    assert main(["report", str(results), "-o", str(out), "--categories", str(cats)]) == 0
    assert "my-bucket" in out.read_text()
    cats.write_text("rules:\n  - {name: broken, type: '('}\n")
    assert main(["report", str(results), "-o", str(out), "--categories", str(cats)]) == 2
    assert "invalid regex" in capsys.readouterr().err


def test_summary_line_order():
    assert summary_line("reports/index.html", {"PASS": 38, "FAIL": 1, "XFAIL": 2, "ERROR": 1}) == \
        "reports/index.html: 42 runs: 38 PASS, 2 XFAIL, 1 FAIL, 1 ERROR"
    assert summary_line("x.html", {}) == "x.html: 0 runs"
    assert summary_line("x.html", {"PASS": 1}, ("sim",)) == "x.html: 1 run on sim: 1 PASS"


def test_scale_5000_runs_is_small(tmp_path):
    """The page's size stays bounded at scale; its paint time is the browser test's (tests/browser),
    a unit test carries no wall-clock bound."""
    runs = synthetic_outcomes(5000)
    results = tmp_path / "results.jsonl"
    with ResultsWriter(results) as w:
        for run in runs:
            w.append(run)
    summary = build_report([results], tmp_path / "index.html")
    size = (tmp_path / "index.html").stat().st_size
    assert summary.startswith(f"{tmp_path / 'index.html'}: 5000 runs on ptx, sim: ")
    assert size < 10 * 1024 * 1024


def test_run_entries_name_their_engine_the_bundled_one_too():
    """an entry says which engine ran it, whichever it is."""
    html = render_html([outcome("a", "forward", state="FAIL"), with_engine(outcome("a", "reverse"), "warp")])
    entries = re.findall(r"<summary>(.*?)</summary>", html)
    assert any("forward" in s and "bundled \u00b7 sim" in s for s in entries), entries
    assert any("reverse" in s and "warp \u00b7 sim" in s for s in entries), entries


def test_a_passing_runs_generated_kernel_says_why_it_is_not_embedded():
    """the disclosure of a passing run's kernel never opens empty without a word."""
    run = outcome("a", "forward")
    run.sources = {"forward": ".cache/harness/generated/a__forward_0123456789abcdef.py"}
    html = render_html([run])
    line = next(ln for ln in html.splitlines() if "generated kernel (forward)" in ln)
    assert "not embedded for a passing run" in line and "--embed-sources all" in line


# ----------------------------------------------------------------------------- plots (drawn as text)

def test_scatter_draws_equal_points_once_with_their_count():
    from harness.report.svg import scatter_ad_fd
    plot = str(scatter_ad_fd([WorstEntry(f"out[{i}]", 0.03116, 0.03116, 0, 0) for i in range(8)]
                             + [WorstEntry("out[8]", 0.5, 0.01, 0.49, 49.0)]))
    assert plot.count("<circle") == 2 and "\u00d78</text>" in plot
    ticks = re.findall(r'class="tick"[^>]*>([^<]+)<', plot)
    assert len(ticks) == 4 and all(float(t) == float(t) for t in ticks)          # whole numbers, as written


def test_scatter_margin_holds_the_longest_tick_label():
    from harness.report.svg import scatter_ad_fd, text_width
    plot = str(scatter_ad_fd([WorstEntry("a", -123456.7, 0.001234, 1, 1)]))
    frame_x = float(re.search(r'<rect x="(\d+)"', plot).group(1))
    ticks = re.findall(r'class="tick" text-anchor="end">([^<]+)<', plot)
    assert ticks and all(frame_x - 3 - text_width(t) >= 14 for t in ticks)   # room left of each, past the axis title


def test_step_plot_draws_each_recorded_stage_at_its_finest_step():
    from harness.report.step_plot import stage_points, step_plot
    metrics = {"stages": {"central": 12.0, "richardson": 9.0, "large-step": 0.5}, "h": [1e-3, 4e-3],
               "h_large": [0.1]}
    assert stage_points(metrics) == [("central", 4e-3, 12.0), ("richardson", 2e-3, 9.0), ("large-step", 0.05, 0.5)]
    assert str(step_plot(metrics)).count("<circle") == 3
    # one stage (the central difference passed) says nothing about a trend: no plot
    assert step_plot({"stages": {"central": 0.2}, "h": [1e-3]}) is None
    # a stage whose step was not recorded, or whose error cannot be drawn on a log axis, is left out
    assert stage_points({"stages": {"central": 3.0, "large-step": 2.0, "richardson": 0.0}, "h": [1e-3]}) \
        == [("central", 1e-3, 3.0)]


def test_refinement_stages_are_plotted_in_the_run_and_left_out_of_its_metrics_text():
    run = outcome("c1", "forward", "FAIL", worst=[("out[0]", 1.0, 2.0, 1.0, 0.5)])
    run.oracles[0].metrics.update({"stages": {"central": 12.0, "richardson": 11.0}, "h": [1e-3]})
    html = render_html([run])
    assert "finite-difference error against step" in html and 'class="plot steps"' in html
    assert "stages=" not in html and "h=[0.001]" in html


def test_plot_text_from_a_record_is_escaped():
    from harness.report.state_chart import state_bars
    from harness.report.step_plot import step_plot
    plot = str(step_plot({"stages": {"<script>x</script>": 3.0, "central": 2.0}, "h": [1e-3]}))
    assert "<script>" not in plot                   # an unknown stage has no step: left out, never raw
    chart = str(state_bars([("<b>warp</b> \u00b7 sim \u00b7 reverse", Counter({"<i>ODD</i>": 2, "PASS": 1}))]))
    assert "<b>" not in chart and "<i>" not in chart and "&lt;b&gt;warp" in chart
