"""The case format's second edition: engine options, FD steps, precision detection."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from harness.cases.loader import case_schema
from harness.engine.runtime.launch import EngineOptions

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- item 7: one definition

def _docs_table(heading: str) -> dict[str, list[str]]:
    """The rows of the first table under `## heading` in docs/case-format.md: key -> cells."""
    text = (ROOT / "docs" / "case-format.md").read_text()
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 3:
            rows[cells[0].strip("`")] = cells
    return rows


def test_every_engine_option_is_a_case_key_with_the_same_default():
    schema = case_schema()["$defs"]["engine"]["properties"]
    fields = {f.name: f.default for f in dataclasses.fields(EngineOptions)}
    assert set(schema) == set(fields), "schema engine keys and EngineOptions fields differ"
    for name, default in fields.items():
        assert schema[name].get("default") == default, name
        if isinstance(default, bool):
            assert schema[name]["type"] == "boolean", name
        elif isinstance(default, int):
            assert schema[name]["type"] == "integer", name
        else:
            assert default in schema[name]["enum"], name


def test_docs_engine_table_lists_every_option_with_its_default():
    rows = _docs_table("engine")
    fields = {f.name: f.default for f in dataclasses.fields(EngineOptions)}
    assert set(rows) == set(fields)
    for name, default in fields.items():
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        assert rows[name][2] == f"`{shown}`", (name, rows[name])


def test_every_engine_option_reaches_the_engine():
    """A case's engine mapping becomes EngineOptions field by field (none is dropped)."""
    values = {"launch": "packed", "fold_constants": False, "nested_config": "native",
              "fastmath": True, "debug": True, "tape_size": 7,
              "recompute_limit": 3, "gather_stencils": True, "coarsen_blocks_per_sm": 5,
              "loop_jacobian_limit": 5}
    assert set(values) == {f.name for f in dataclasses.fields(EngineOptions)}
    options = EngineOptions.from_dict(values)
    assert dataclasses.asdict(options) == values


def test_docs_top_level_table_lists_every_schema_key():
    schema = case_schema()
    rows = _docs_table("Top-level keys")
    assert set(rows) == set(schema["properties"])


# ----------------------------------------------------------------------------- item 6: FD steps

def test_steps_are_per_argument_group():
    from harness.oracles.fd import CENTRAL_STEP, argument_steps, step_size
    base = {"x": np.array([0.3, -0.2]), "big": np.full(3, 1e4), "y": np.array([2.0])}
    v = {"x": np.array([1.0, -1.0]), "big": np.ones(3), "y": np.array([0.5])}
    steps = argument_steps(base, v)
    by_name = {n: h for h, names in steps for n in names}
    assert by_name["x"] == by_name["y"] == pytest.approx(CENTRAL_STEP * 2.0)   # one group: |x|, |y| <= 4
    assert by_name["big"] == pytest.approx(CENTRAL_STEP * 1e4)
    assert len(steps) == 2
    # A step for x alone ignores the large array elsewhere in the state.
    assert step_size(base, {"x": v["x"], "big": np.zeros(3)}) == pytest.approx(CENTRAL_STEP)


def test_float32_casts_are_seen_in_the_kernel_and_its_helpers():
    from harness.cases.inputs import load_kernel
    from harness.problems.precision import casts_to_float32
    assert casts_to_float32(load_kernel("kernels/precision.py:float32_inside", ROOT))
    assert not casts_to_float32(load_kernel("kernels/loops.py:weighted_sum_dynamic", ROOT))


# ----------------------------------------------------------------------------- items 3, 4, 5: loader

def _write_case(tmp_path, text: str) -> Path:
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "kernels" / "k.py").write_text("def k(out, x):\n    pass\n")
    (tmp_path / "cases").mkdir(exist_ok=True)
    path = tmp_path / "cases" / "c.yaml"
    path.write_text(text)
    return path


BASE = """id: c
kernel: kernels/k.py:k
launch: {threads: 4}
args:
  out: {array: {shape: [4], dtype: float64}, activity: duplicated, shadow: {init: ones}}
  x:   {array: {shape: [4], dtype: float64}, activity: duplicated}
"""


def _load(tmp_path, extra: str):
    from harness.cases import load_case_file
    return load_case_file(_write_case(tmp_path, BASE + extra), tmp_path)


def test_per_mode_expectation_reaches_each_run(tmp_path):
    from harness.cases import expand_runs
    case, = _load(tmp_path, "expect: {forward: pass, reverse: unsupported}\n")
    runs = {r.mode: r.case.expect.kind for r in expand_runs(case, "sim")}
    assert runs == {"forward": "pass", "reverse": "unsupported"}


@pytest.mark.parametrize("extra, message", [
    ("expect: {forward: pass}\n", "missing: reverse"),
    ("modes: [forward]\nexpect: {forward: pass, reverse: pass}\n", "does not run"),
    ("check: {values: {reverse: {x: [1, 2, 3]}}}\n", "values hold 3 elements"),
    ("check: {values: {primal: {out: 1.0}}}\n", "does not run primal"),
    ("check: {values: {reverse: {y: 1.0}}}\n", "'y' is not an argument"),
    ("check: {fd: false, dot: false}\n", "nothing checks"),
    ("expect: {xfail: {reason: r}}\nvariants:\n  v:\n    engine: {fastmath: true}\n", "inherit the base case's xfail"),
    ("expect: {forward: pass, reverse: {xfail: {reason: r}}}\nvariants:\n  v:\n    kernel: kernels/k.py:k\n",
     "inherit the base case's xfail"),
])
def test_second_edition_mistakes_are_load_errors(tmp_path, extra, message):
    from harness.core.errors import CaseError
    with pytest.raises(CaseError, match=message):
        _load(tmp_path, extra)


def test_gradient_values_need_a_chosen_direction(tmp_path):
    from harness.core.errors import CaseError
    text = BASE.replace(", shadow: {init: ones}", "") + "check: {values: {forward: {out: 0.0}}}\n"
    from harness.cases import load_case_file
    with pytest.raises(CaseError, match="shadow: \\{init"):
        load_case_file(_write_case(tmp_path, text), tmp_path)


def test_expected_values_oracle_fails_a_wrong_value():
    from harness.oracles.expected import check_expected_values
    from harness.oracles.tolerance import Tolerance
    tol = Tolerance(1e-6, 1e-9)
    got = {"x": np.array([1.0, 2.0]), "a": np.float64(3.0)}
    assert check_expected_values("reverse", got, {"x": [1.0, 2.0], "a": 3.0}, tol).verdict == "pass"
    bad = check_expected_values("reverse", got, {"x": [1.0, 2.5]}, tol)
    assert bad.verdict == "fail" and "x[1]" in bad.message


def test_fd_false_runs_no_finite_differences():
    from harness.oracles import run_gradient_oracles
    from harness.oracles.problem import StateVar

    class Linear:
        inputs = outputs = [StateVar("x", (3,))]
        dtype = "float64"

        def base_point(self):
            return {"x": np.ones(3)}

        def primal64(self, state):
            raise AssertionError("fd: false must not evaluate the primal for finite differences")

        def jvp(self, v):
            return {"x": 2 * v["x"]}

        def vjp(self, w):
            return {"x": 2 * w["x"]}

    verdicts = {v.name: v.verdict for v in run_gradient_oracles(Linear(), "forward", rng=0, fd=False)}
    assert verdicts == {"fd-forward": "skip", "zero": "skip", "dot": "pass"}


# ----------------------------------------------------------------------------- items 1, 2: programs

PROGRAM = """id: p
program:
  buffers:
    tmp: {array: {shape: [4], dtype: float64}, activity: duplicated}
  steps:
    - {kernel: kernels/k.py:k, launch: {threads: 4}, args: [tmp, x]}
    - repeat: 3
      steps:
        - {kernel: kernels/k.py:k, launch: {threads: 4}, args: [x, tmp]}
args:
  x: {array: {shape: [4], dtype: float64}, activity: duplicated}
"""


def test_program_loads_with_loops_unrolled(tmp_path):
    from harness.cases import load_case_file
    case, = load_case_file(_write_case(tmp_path, PROGRAM), tmp_path)
    launches = case.program.launches()
    assert [s.args for s in launches] == [("tmp", "x")] + [("x", "tmp")] * 3
    assert case.kernel.function == "k" and case.program.buffers[0].activity == "duplicated"


@pytest.mark.parametrize("old, new, message", [
    ("args: [tmp, x]}", "args: [tmp]}", "takes 2 arguments, the step passes 1"),
    ("args: [tmp, x]}", "args: [tmp, y]}", "'y' is neither an argument"),
    ("id: p\n", "id: p\nkernel: kernels/k.py:k\n", "either a kernel or a program"),
    ("id: p\n", "id: p\nreplay: {restore: [nope]}\n", "replay.restore names 'nope'"),
])
def test_program_mistakes_are_load_errors(tmp_path, old, new, message):
    from harness.cases import load_case_file
    from harness.core.errors import CaseError
    with pytest.raises(CaseError, match=message):
        load_case_file(_write_case(tmp_path, PROGRAM.replace(old, new, 1)), tmp_path)


def test_kernel_access_scan():
    from harness.cases.inputs import load_kernel
    from harness.problems.program_access import array_access
    access = array_access(load_kernel("kernels/programs.py:compact_positive", ROOT))
    assert access.writes == {"out", "counter"} and access.reads == {"x", "counter"}
    access = array_access(load_kernel("kernels/programs.py:diffuse", ROOT))
    assert access.writes == {"u_next"} and access.reads == {"u"}


def test_unused_program_buffer_is_a_load_error(tmp_path):
    from harness.cases import load_case_file
    from harness.core.errors import CaseError
    text = PROGRAM.replace("[tmp, x]", "[x, x]").replace("[x, tmp]", "[x, x]")
    with pytest.raises(CaseError, match="tmp is passed to no launch"):
        load_case_file(_write_case(tmp_path, text), tmp_path)


# ----------------------------------------------------------------------------- item 9: primal oracle

def test_numpy_reference_catches_a_wrong_broadcast_axis():
    from harness.cases.inputs import HostArg
    from harness.model import ArgSpec
    from harness.checks.primal_reference import elementwise_verdict

    def axpy(a, x, y):
        return a * x + y
    x = np.arange(15.0).reshape(3, 5)
    y3 = np.array([10.0, 20.0, 30.0])
    args = [HostArg(ArgSpec("out", "array"), np.zeros((3, 3))), HostArg(ArgSpec("a", "scalar"), np.float64(2.0)),
            HostArg(ArgSpec("x", "array"), x[:, :3]), HostArg(ArgSpec("y", "array"), y3)]
    right = 2.0 * x[:, :3] + y3[None, :]          # numpy: y along the last axis
    wrong = 2.0 * x[:, :3] + y3[:, None]          # a front end reading y along the rows
    assert elementwise_verdict(axpy, args, right, "float64").verdict == "pass"
    bad = elementwise_verdict(axpy, args, wrong, "float64")
    assert bad.verdict == "fail" and "out[" in bad.message


def test_direct_reference_skips_order_dependent_kernels():
    from harness.cases.inputs import load_kernel
    from harness.checks.primal_reference import _order_dependent
    assert "atomic" in _order_dependent(load_kernel("kernels/programs.py:compact_positive", ROOT))
    assert "autodiff" in _order_dependent(load_kernel("kernels/nested.py:df", ROOT))
    assert _order_dependent(load_kernel("kernels/programs.py:diffuse", ROOT)) is None


# ----------------------------------------------------------------------------- item 8: nested Active

def test_nested_adjoint_needs_reverse_mode_and_known_names(tmp_path):
    from harness.cases import load_case_file
    from harness.core.errors import CaseError
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "n.py").write_text("def f(A, a):\n    pass\n\ndef df(A, dA, a, da):\n    pass\n")
    (tmp_path / "cases").mkdir()
    text = """id: n
kernel: kernels/n.py:df
launch: {grid: 1, block: 1}
modes: [primal]
args:
  A:  {array: {shape: [1], dtype: float64}}
  dA: {array: {shape: [1], dtype: float64}}
  a:  {scalar: {value: 1.0}}
  da: {array: {shape: [1], dtype: float64}}
check:
  nested: {function: kernels/n.py:f, mode: MODE, args: {A: {shadow: dA}, a: {adjoint: OUT}}}
"""
    path = tmp_path / "cases" / "n.yaml"
    path.write_text(text.replace("MODE", "reverse").replace("OUT", "da"))
    case, = load_case_file(path, tmp_path)
    assert case.check.nested["args"]["a"] == {"adjoint": "da"}
    path.write_text(text.replace("MODE", "forward").replace("OUT", "da"))
    with pytest.raises(CaseError, match="reverse mode only"):
        load_case_file(path, tmp_path)
    path.write_text(text.replace("MODE", "reverse").replace("OUT", "nope"))
    with pytest.raises(CaseError, match="nested adjoint 'nope'"):
        load_case_file(path, tmp_path)


def test_checks_a_program_does_not_run_are_refused(tmp_path):
    from harness.cases import load_case_file
    from harness.core.errors import CaseError
    with pytest.raises(CaseError, match="check.repeat is not available for a program"):
        load_case_file(_write_case(tmp_path, PROGRAM + "check: {repeat: 3}\n"), tmp_path)
