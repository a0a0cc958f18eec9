"""Docs that cannot drift: every table of options, keys, states, facts and mutants in docs/ is
checked against the code it describes, and every `module.py: name` reference against the module.

The checker is generic (`table_keys`): a new table gets one line here. Owners: the case-key,
activity, expect and engine-option tables follow harness/cases/schema.json (the case format's single
definition), the meta-line table harness/results/store.py, the tolerance table harness/policy.py; the
rule list in docs/engine.md is generated from harness/engine/rules/table.py (tests/engine/test_rule_cases.py).
"""
from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def section(doc: str, heading: str) -> str:
    """The text under a markdown heading (up to the next heading of the same or a higher level)."""
    text = (DOCS / doc).read_text()
    m = re.search(rf"^(#+) {re.escape(heading)}\s*$", text, re.M)
    assert m, f"no heading '{heading}' in docs/{doc}"
    level = len(m.group(1))
    rest = text[m.end():]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


def table_keys(doc: str, heading: str, column: int = 0, index: int = 0) -> list[str]:
    """The first column (backticks stripped) of the `index`-th table under `heading`."""
    tables, rows = [], []
    for line in section(doc, heading).splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            tables.append(rows)
            rows = []
    if rows:
        tables.append(rows)
    assert len(tables) > index, f"no table {index} under '{heading}' in docs/{doc}"
    keys = []
    for row in tables[index][2:]:              # after the header and separator rows
        keys += [k.strip().strip("`") for k in row[column].split(",")]   # `a`, `b`: one row, two keys
    return keys


def _schema() -> dict:
    return json.loads((ROOT / "harness" / "cases" / "schema.json").read_text())


def _props(name: str) -> list[str]:
    schema = _schema()
    node = schema["$defs"].get(name, schema["properties"].get(name, {}))
    return list(node.get("properties", {}))


# ----------------------------------------------------------------------------- case format

def test_top_level_case_keys_match_the_schema():
    assert table_keys("case-format.md", "Top-level keys") == list(_schema()["properties"])


def test_engines_entry_table_matches_the_schema():
    entry = _schema()["$defs"]["engines"]["additionalProperties"]
    assert table_keys("case-format.md", "engines: native kernels") == list(entry["properties"])


def test_engine_option_table_matches_the_schema_and_the_engine():
    from harness.engine.runtime.launch import EngineOptions
    documented = table_keys("case-format.md", "engine")
    assert documented == _props("engine")
    fields = {f.name for f in dataclasses.fields(EngineOptions)}
    assert set(documented) <= fields, "the schema accepts an option the engine does not have"


def test_check_table_matches_the_schema():
    documented = [k for k in table_keys("case-format.md", "check") if "." not in k]
    assert sorted(documented) == sorted(_props("check"))


def test_launch_table_matches_the_schema():
    assert table_keys("case-format.md", "launch") == _props("launch")


def test_array_and_scalar_tables_match_the_schema():
    assert table_keys("case-format.md", "array") == _props("array")
    assert table_keys("case-format.md", "scalar") == _props("scalar")


def test_argument_tables_cover_the_schema():
    """`args`: the keys of its own table, and `array` / `scalar` in subsections of their own."""
    documented = set(table_keys("case-format.md", "args")) | {"array", "scalar"}
    text = section("case-format.md", "args")
    documented |= {k for k in _props("arg") if f"`{k}:" in text or f"`{k}`" in text}
    assert documented == set(_props("arg"))


def test_activity_table_matches_the_schema():
    enum = _schema()["$defs"]["activity"]["enum"]
    assert table_keys("case-format.md", "Activities") == enum


def test_values_table_matches_the_schema():
    assert sorted(table_keys("case-format.md", "values")) == sorted(_props("expected_values"))


def test_expect_forms_match_the_schema():
    """`{error: {type, match?, ...}}`: each documented form and its keys are the schema's."""
    forms = {}
    rows = [line.split("|")[1] for line in section("case-format.md", "expect").splitlines() if line.startswith("| `")]
    for key in rows:
        m = re.match(r"\s*\{(\w+): \{([\w?, ]+)\}\}", key.replace("`", ""))
        if m:
            forms[m.group(1)] = [k.strip().rstrip("?") for k in m.group(2).split(",")]
    one = _schema()["$defs"]["expect_one"]["else"]["properties"]
    assert set(forms) == set(one)
    for form, keys in forms.items():
        assert sorted(keys) == sorted(one[form].get("properties", {})), form


def test_program_and_jobs_tables_match_the_schema():
    assert table_keys("case-format.md", "program") == _props("program")
    assert table_keys("case-format.md", "jobs") == list(_schema()["$defs"]["jobs"]["items"]["properties"])


# ----------------------------------------------------------------------------- results and report

def test_run_record_fields_match_the_outcome():
    from harness.model import Outcome
    documented = [k for k in table_keys("report.md", "Run lines") if k != "type"]
    fields = [f.name for f in dataclasses.fields(Outcome)]
    assert [k for k in documented if k in fields] == fields
    assert set(documented) - set(fields) <= {"session"}      # added by the session's results writer


def test_meta_line_fields_match_the_metadata_written():
    from harness.results.store import collect_metadata
    documented = [k for k in table_keys("report.md", "The meta line") if k != "type"]
    assert documented == list(collect_metadata("sim"))


def test_tolerance_table_is_the_policys():
    from harness.policy import GRADIENT_RTOL_ATOL
    rows = [line for line in section("oracles.md", "Tolerances").splitlines() if line.startswith("| float")]
    documented = {cells[0]: (float(cells[1]), float(cells[2]))
                  for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows)}
    assert documented == GRADIENT_RTOL_ATOL


def test_documented_states_are_the_policys():
    from harness.policy import STATES
    row = next(line for line in section("report.md", "Run lines").splitlines() if line.startswith("| `state`"))
    assert re.findall(r"`([A-Z]+)`", row.split("|")[2]) == list(STATES)


def _ptx_fact_names() -> set[str]:
    tree = ast.parse((ROOT / "harness" / "backends" / "ptx.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "ptx_facts")
    return {k.value for n in ast.walk(fn) if isinstance(n, ast.Dict) for k in n.keys if isinstance(k, ast.Constant)}


def test_ptx_record_example_uses_real_fact_names_and_kernel_keys():
    row = next(line for line in section("report.md", "Run lines").splitlines() if line.startswith("| `ptx`"))
    example = json.loads(re.search(r"e\.g\. `(\{.*\})`", row).group(1))
    for kernel, facts in example.items():
        assert re.fullmatch(r"\w+__(primal|forward|reverse)", kernel), kernel   # as runs key them
        assert set(facts) <= _ptx_fact_names()


def _timing_keys() -> set[str]:
    keys = set()
    for path in (ROOT / "harness").rglob("*.py"):
        text = path.read_text()
        keys |= set(re.findall(r'timed\("(\w+)"\)', text)) | set(re.findall(r'timings\["(\w+)"\] =', text))
    return keys


def test_timings_example_uses_keys_the_runs_record():
    row = next(line for line in section("report.md", "Run lines").splitlines() if line.startswith("| `timings`"))
    example = json.loads(re.search(r"e\.g\. `(\{.*\})`", row).group(1))
    assert set(example) <= _timing_keys()


# ----------------------------------------------------------------------------- mutants, rules, modules

def test_mutant_table_lists_every_mutant():
    from harness.selftest.mutants import MUTANTS
    assert table_keys("mutations.md", "The mutants") == [m.name for m in MUTANTS]


def _defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(n.name)
        elif isinstance(n, ast.Assign):
            names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return names


REFERENCE = re.compile(r"`((?:harness/)?[\w/]+\.py)(?::\s*|`?,? `?)?(\w+)?`?")


@pytest.mark.parametrize("doc", sorted(p.name for p in DOCS.glob("*.md")))
def test_module_references_exist(doc):
    """`engine/emission/codegen.py: hoist_prefetch`, `harness/results/store.py`: the file exists (relative to the
    project or to harness/), and a name given after a colon is defined in it."""
    text = (DOCS / doc).read_text()
    problems = []
    for m in re.finditer(r"`((?:harness/|engine/|tests/|kernels/|benchmarks/)?[\w/.-]+\.py)(?::\s*(\w+))?`", text):
        rel, name = m.group(1), m.group(2)
        if rel.startswith(".") or "path/to" in rel or len(Path(rel).stem) == 1:
            continue                          # an example path, not a reference
        candidates = [ROOT / rel, ROOT / "harness" / rel]
        path = next((c for c in candidates if c.exists()), None)
        if path is None:
            if "/" in rel or (ROOT / "harness" / "engine" / rel).exists():
                path = ROOT / "harness" / "engine" / rel if (ROOT / "harness" / "engine" / rel).exists() else None
            else:
                continue                      # a bare file name of a user's kernel, an example
        if path is None:
            problems.append(f"{rel} does not exist")
        elif name and name not in _defined(path):
            problems.append(f"{rel} defines no {name}")
    assert problems == []


def test_adapter_limits_table_is_the_printout_of_the_limits_table():
    from harness.adapters.limits import markdown_table
    text = section("engines.md", "What the systems lack")
    assert markdown_table() in text, "regenerate with: python -m harness.adapters.limits"


def test_known_fuzz_findings_table_is_the_printout_of_the_known_classes():
    from harness.fuzz.known import KNOWN, markdown_table
    text = (DOCS / "fuzz.md").read_text()
    assert markdown_table() in text, "regenerate with: python -m harness.fuzz.known"
    assert all(f"`{k.name}`" in text for k in KNOWN)


# ----------------------------------------------------------------------------- counts per engine (generated)

SMALL_RESULTS = "tests/data/engine-counts-small.jsonl"


def engine_counts_block(text: str) -> str:
    from harness.tools.engine_counts import MARKERS
    start, end = MARKERS
    assert start in text and end in text, f"docs/engines.md has no {start} block"
    return text.split(start, 1)[1].split(end, 1)[0].lstrip("\n")


def test_engine_counts_command_rewrites_only_its_block(tmp_path, monkeypatch, capsys):
    from harness.tools.engine_counts import main
    doc = tmp_path / "engines.md"
    original = (DOCS / "engines.md").read_text()
    doc.write_text(original)
    monkeypatch.chdir(ROOT)
    assert main([SMALL_RESULTS, "--doc", str(doc)]) == 0
    written = doc.read_text()
    assert main([SMALL_RESULTS]) == 0                     # without --doc: the block it would write
    printed = capsys.readouterr().out.split("\n", 1)[1]   # (after the --doc run's one line)
    assert engine_counts_block(written) == printed
    before, after = original.split("<!-- engine-counts -->")[0], original.split("<!-- /engine-counts -->")[1]
    assert written.startswith(before) and written.endswith(after)
    # the small input's counts, by hand: the bundled engine's run is not counted; fail takes ERROR, XPASS
    assert "| Taichi 1.7.4 | 4 | 2 | 2 | 0 | 0 | 0 |" in printed
    assert "| Warp 1.19.0 | 6 | 2 | 1 | 1 | 1 | 1 |" in printed
    assert f"Regenerate with `python -m harness.tools.engine_counts {SMALL_RESULTS} --doc docs/engines.md`" in printed
    assert "at git 0123456" in printed


def test_engine_counts_in_the_doc_are_the_commands_output():
    # The block is the command's output as written: its table re-rendered from the numbers it shows
    # is the same text, each row adds up, and it names the command that regenerates it.
    from harness.tools.engine_counts import COLUMNS, COMMAND, table
    shown = engine_counts_block((DOCS / "engines.md").read_text())
    assert f"Regenerate with `{COMMAND} " in shown and "--doc docs/engines.md`" in shown
    rows = [line for line in shown.splitlines() if line.startswith("| ") and not line.startswith("| engine")]
    assert rows
    runs = []
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        engine, version = cells[0].split(" ", 1)
        counts = dict(zip(COLUMNS, map(int, cells[1:])))
        assert counts["runs"] == sum(counts[c] for c in COLUMNS[1:]), row
        for state, column in (("PASS", "pass"), ("FAIL", "fail"), ("UNSUPPORTED", "unsupported"),
                              ("XFAIL", "xfail"), ("SKIP", "skip")):
            runs += [{"engine": engine.lower(), "engine_version": version, "state": state}] * counts[column]
    assert table(runs) == shown[shown.index("| engine"):]
