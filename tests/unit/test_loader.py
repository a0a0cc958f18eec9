"""The case loader: YAML -> validated Case records -> Runs.

Every test writes a tiny project into tmp_path (cases/ and kernels/k.py) so that kernel references
resolve for real. Fast and numba-free: kernels are parsed, never imported.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from harness.cases import CaseError, apply_dtype, case_schema, expand_runs, load_case_file
from harness.model import ArgSpec, ArraySpec, Case, CheckSpec, Expectation, FDSpec, LaunchSpec

KERNELS = '''\
from numba import cuda


def add(out, x, y):
    i = cuda.grid(1)
    out[i] = x[i] + y[i]


@cuda.jit
def scale(out, x, a):
    out[0] = a * x[0]


def two(a, b):
    pass


def mix(out, half, idx, flag, z, a, n, t):
    pass


class NotAFunction:
    def method(self, out, x, y):
        pass
'''

# Line numbers below refer to this text: 1 id, 2 kernel, 3 launch, 4 args, 5 out, 6 x, 7 y.
BASE = """\
id: add-case
kernel: kernels/k.py:add
launch: {threads: 8}
args:
  out: {array: {shape: [8], dtype: float32}, activity: duplicated}
  x: {array: {shape: [8], dtype: float32, init: ones}}
  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNELS)
    (tmp_path / "cases").mkdir()
    return tmp_path


def write_case(project: Path, text: str, name: str = "c.yaml") -> Path:
    path = project / "cases" / name
    path.write_text(text)
    return path


def load(project: Path, text: str) -> list[Case]:
    return load_case_file(write_case(project, text), project)


def edit(old: str, new: str) -> str:
    """BASE with one exact substring replaced (fails loudly if the test's anchor drifted)."""
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)


# ----------------------------------------------------------------------------- good cases

def test_minimal_case_gets_every_default(project):
    [case] = load(project, BASE)
    assert case.id == "add-case"
    assert case.source == "cases/c.yaml"
    assert str(case.kernel) == "kernels/k.py:add"
    assert (case.title, case.description, case.links, case.tags) == ("", "", (), ())
    assert case.launch == LaunchSpec(style="kernel", threads=(8,))
    assert case.modes == ("forward", "reverse")
    assert case.dtypes == (None,)
    assert case.seed == 0
    assert case.check == CheckSpec(fd=FDSpec(directions=2, rtol=None, atol=None), dot=True,
                                   repeat=1, zero_guard=True)
    assert case.expect == Expectation(kind="pass")
    assert (case.engine, case.jobs, case.ptx) == ({}, (), {})
    assert (case.variant, case.variant_names, case.line) == (None, (), 1)

    out, x, y = case.args
    assert [a.name for a in case.args] == ["out", "x", "y"]
    assert out == ArgSpec(name="out", kind="array", activity="duplicated",
                          array=ArraySpec(shape=(8,), dtype="float32", init="zeros"), line=5)
    assert x.activity == "const" and x.array.init == "ones" and x.line == 6
    assert y.array.init == "normal" and y.line == 7


FULL = """\
# A header comment: case lines still count from the top of the file.
id: scale.full_case-1
title: every key at once
description: |
  Two lines
  of text.
links: [https://example.org/issue/1]
tags: [scale, fd_off]
kernel: ./kernels/k.py:scale
launch: {grid: [2, 2], block: 32}
args:
  out:
    array:
      shape: [2, 3]
      dtype: float64
      init: {values: [[1, 2, 3], [4, 5, 6]]}
      layout: {transpose: [1, 0]}
    activity: batch_duplicated
    width: 2
    shadow: {init: {values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}}
  x: {array: {shape: [3, 4], dtype: int32, init: {values: [1, 2, 3, 4]}, layout: {broadcast: [4]}}, activity: duplicated}
  a: {scalar: {value: 2.5}, activity: active}
modes: [primal, reverse]
dtypes: [float32]
seed: 7
check:
  fd: {directions: 3, rtol: 2e-3, atol: 0}
  dot: false
  repeat: 4
  zero_guard: false
  activities: all
  block_sweep: [32, 64]
expect: {xfail: {reason: known bug, link: https://example.org/issue/1}}
engine: {launch: packed, fold_constants: false, nested_config: native, fastmath: true, debug: false}
jobs:
  - {function: f, mode: reverse, parent: df, target: same-as-parent, kernel: false, config: {fastmath: true}}
ptx: {reverse: {atomics: 0, local_memory: {max: 16}}, forward: {fp64: {min: 1, max: 4}}}
"""


def test_full_case_normalizes_every_key(project):
    [case] = load(project, FULL)
    assert case.id == "scale.full_case-1"
    assert case.description == "Two lines\nof text.\n"
    assert case.links == ("https://example.org/issue/1",) and case.tags == ("scale", "fd_off")
    assert str(case.kernel) == "kernels/k.py:scale"          # ./ normalized away
    assert case.launch == LaunchSpec(style="kernel", grid=(2, 2), block=(32,))
    assert (case.modes, case.dtypes, case.seed) == (("primal", "reverse"), ("float32",), 7)

    out, x, a = case.args
    assert out.array == ArraySpec(shape=(2, 3), dtype="float64",
                                  init={"values": [[1, 2, 3], [4, 5, 6]]},
                                  layout={"transpose": (1, 0)})
    assert (out.activity, out.width, out.line) == ("batch_duplicated", 2, 12)
    assert out.shadow == {"init": {"values": list(range(1, 13))}}     # width x shape values
    # An integer array marked duplicated loads: the engine reports it (ActivityError).
    assert (x.array.shape, x.array.dtype, x.activity) == ((3, 4), "int32", "duplicated")
    assert x.array.layout == {"broadcast": (4,)}            # values fill the stored [4]
    assert (a.kind, a.value, a.dtype, a.activity) == ("scalar", 2.5, "float64", "active")

    fd = case.check.fd
    assert fd == FDSpec(directions=3, rtol=0.002, atol=0.0)
    assert isinstance(fd.rtol, float)                             # 2e-3 read as a number
    assert case.check == CheckSpec(fd=fd, dot=False, repeat=4, zero_guard=False,
                                   activities="all", block_sweep=(32, 64))
    assert case.expect == Expectation(kind="xfail", reason="known bug",
                                      link="https://example.org/issue/1", strict=True)
    assert case.engine == {"launch": "packed", "fold_constants": False,
                           "nested_config": "native", "fastmath": True, "debug": False}
    assert case.jobs == ({"function": "f", "mode": "reverse", "parent": "df",
                          "target": "same-as-parent", "kernel": False,
                          "config": {"fastmath": True}},)
    assert case.ptx == {"reverse": {"atomics": 0, "local_memory": {"max": 16}},
                        "forward": {"fp64": {"min": 1, "max": 4}}}
    assert type(case.engine) is dict and type(case.jobs[0]["config"]) is dict   # no line wrappers


def test_scalar_type_and_function_args(project):
    text = """\
id: kinds
kernel: kernels/k.py:add
launch: {threads: 1}
args:
  out: {scalar: {value: 3}}
  x: {type: numpy.float64}
  y: {function: kernels/k.py:two}
expect: {error: {type: KernelError, match: "isbits .* x", argument: 1, param: x}}
"""
    [case] = load(project, text)
    out, x, y = case.args
    assert (out.kind, out.value, out.dtype) == ("scalar", 3, "int64")
    assert (x.kind, x.value, x.activity) == ("type", "numpy.float64", "const")
    assert (y.kind, y.value) == ("function", "kernels/k.py:two")
    assert case.launch == LaunchSpec(style="kernel", threads=(1,))
    assert case.expect == Expectation(kind="error", error_type="KernelError",
                                      match="isbits .* x", argument=1, param="x")


@pytest.mark.parametrize("scalar, dtype", [("{value: true}", "bool"), ("{value: 1.0}", "float64"),
                                           ("{value: 1, dtype: float32}", "float32")])
def test_scalar_dtype_defaults(project, scalar, dtype):
    [case] = load(project, edit("{array: {shape: [8], dtype: float32, init: ones}}",
                                f"{{scalar: {scalar}}}"))
    assert case.args[1].dtype == dtype


def test_yaml_reads_json_like_scalars(project):
    """YAML 1.2 core rules: `no` and dates stay strings, 010 is ten, 1e-5 is a float."""
    [case] = load(project, BASE + "tags: [no, on]\ntitle: 2024-01-01\nseed: 010\n"
                  "check: {fd: {atol: 1e-5}}\n")
    assert case.tags == ("no", "on")
    assert case.title == "2024-01-01"
    assert case.seed == 10
    assert case.check.fd.atol == 1e-5


def test_fd_false_disables_and_unsupported_shorthand(project):
    [case] = load(project, BASE + "check: {fd: false}\nexpect: unsupported\n")
    assert case.check.fd is None
    assert case.expect == Expectation(kind="unsupported")


def test_merge_keys_may_override_without_being_duplicates(project):
    text = edit("  out: {array: {shape: [8], dtype: float32}, activity: duplicated}",
                "  out: &arr {array: {shape: [8], dtype: float32}, activity: duplicated}")
    text = text.replace("  y: {array: {shape: [8], dtype: float32, init: normal}, "
                        "activity: duplicated}", "  y: {<<: *arr, activity: const}")
    [case] = load(project, text)
    assert case.args[2].activity == "const" and case.args[2].array.shape == (8,)


def test_decorated_kernel_uses_its_own_parameters(project):
    [case] = load(project, edit("k.py:add", "k.py:scale").replace("  y:", "  a:"))
    assert [a.name for a in case.args] == ["out", "x", "a"]


FACTORY = """\
def make(tile=16):
    size = tile * tile

    def kernel(out, x, y):
        out[0] = x[0] + y[0]
    return kernel


def not_a_factory():
    def inner(out, x, y):
        pass


made = make(8)
not_made = not_a_factory()
"""


def test_a_kernel_a_factory_returns_uses_the_inner_functions_parameters(project):
    (project / "kernels" / "factory.py").write_text(FACTORY)
    [case] = load(project, edit("k.py:add", "factory.py:made"))
    assert [a.name for a in case.args] == ["out", "x", "y"]
    with pytest.raises(CaseError, match="no top-level function 'not_made'"):
        load(project, edit("k.py:add", "factory.py:not_made"))


def test_nested_check(project):
    text = BASE + "check:\n  nested: {function: kernels/k.py:two, mode: reverse, " \
                  "args: {x: {shadow: y}}}\n"
    [case] = load(project, text)
    assert case.check.nested == {"function": "kernels/k.py:two", "mode": "reverse",
                                 "args": {"x": {"shadow": "y"}}}


# ----------------------------------------------------------------------------- malformed cases

ERRORS = [
    # id, case text, line, key, substrings of the message
    ("unknown-top-level-key", BASE + "colour: red\n", 8, "colour",
     ["unknown key 'colour'", "allowed: id, title"]),
    ("unknown-arg-key", edit("float32}, activity: duplicated}", "float32}, activty: duplicated}"),
     5, "args.out.activty",
     ["unknown key 'activty' (allowed: array, scalar, type, function, rng_states, alias, activity, width, shadow)",
      "did you mean 'activity'"]),
    ("bad-activity", edit("normal}, activity: duplicated", "normal}, activity: duplicatd"),
     7, "args.y.activity", ["bad value 'duplicatd'", "batch_duplicated"]),
    ("bad-id", edit("id: add-case", "id: Add_Case"), 1, "id", ["lowercase", "'Add_Case'"]),
    ("missing-id", edit("id: add-case\n", ""), 1, "id", ["missing required key 'id'"]),
    ("kernel-ref-shape", edit("kernels/k.py:add", "kernels/k.py"), 2, "kernel",
     ["path/to/file.py:function"]),
    ("kernel-file-missing", edit("k.py:add", "nope.py:add"), 2, "kernel",
     ["kernels/nope.py", "does not exist"]),
    ("kernel-file-misspelt", edit("k.py:add", "kk.py:add"), 2, "kernel",
     ["kernel file 'kernels/kk.py' does not exist", "did you mean 'kernels/k.py'"]),
    ("kernel-folder-misspelt", edit("kernels/k.py:add", "kernel/k.py:add"), 2, "kernel",
     ["kernel file 'kernel/k.py' does not exist", "did you mean 'kernels/k.py'"]),
    ("kernel-function-missing", edit("k.py:add", "k.py:ad"), 2, "kernel",
     ["no top-level function 'ad'", "did you mean 'add'"]),
    ("kernel-method-is-not-top-level", edit("k.py:add", "k.py:method"), 2, "kernel",
     ["no top-level function 'method'"]),
    ("kernel-escapes-root", edit("kernels/k.py:add", "../x.py:f"), 2, "kernel",
     ["'../x.py'", "outside the project root"]),
    ("kernel-escapes-root-indirectly", edit("kernels/k.py:add", "kernels/../../k.py:add"), 2,
     "kernel", ["outside the project root"]),
    ("kernel-absolute", edit("kernels/k.py:add", "/tmp/k.py:add"), 2, "kernel", ["absolute"]),
    ("arg-name-mismatch", edit("  y:", "  z:"), 7, "args.z",
     ["argument 2 is 'z'", "parameter 2 is 'y'", "add(out, x, y)"]),
    ("arg-order", BASE.replace("  x:", "  T:").replace("  y:", "  x:").replace("  T:", "  y:"),
     6, "args.y", ["argument 1 is 'y'", "parameter 1 is 'x'", "parameter order"]),
    ("arg-missing", BASE.rsplit("  y:", 1)[0], 4, "args", ["missing argument 'y'"]),
    ("arg-extra", BASE + "  z: {scalar: {value: 1}}\n", 8, "args.z", ["extra argument 'z'"]),
    ("active-on-array", edit("float32}, activity: duplicated}", "float32}, activity: active}"),
     5, "args.out.activity", ["'active' is for scalar arguments only"]),
    ("batch-without-width",
     edit("normal}, activity: duplicated", "normal}, activity: batch_duplicated"),
     7, "args.y.activity", ["batch_duplicated", "needs 'width'"]),
    ("width-without-batch", edit("normal}, activity: duplicated", "normal}, activity: "
                                 "duplicated, width: 2"), 7, "args.y.width",
     ["'width' applies only to activity batch_duplicated"]),
    ("type-arg-not-const",
     edit("{array: {shape: [8], dtype: float32, init: ones}}", "{type: int, activity: duplicated}"),
     6, "args.x.activity", ["type argument is always const"]),
    ("two-kinds", edit("init: ones}}", "init: ones}, scalar: {value: 1}}"), 6, "args.x",
     ["exactly one of array, scalar, type, function", "found array, scalar"]),
    ("bad-init-name", edit("init: ones", "init: onez"), 6, "args.x.array.init",
     ["bad value 'onez'", "did you mean 'ones'"]),
    ("bad-init-pair", edit("init: ones", "init: {uniform: [1]}"), 6,
     "args.x.array.init.uniform", ["at least 2 items"]),
    ("bad-init-type", edit("init: ones", "init: 5"), 6, "args.x.array.init",
     ["init is zeros, ones, arange, normal"]),
    ("bad-init-two-ways", edit("init: ones", "init: {uniform: [0, 1], normal: [0, 1]}"), 6,
     "args.x.array.init", ["exactly one of uniform, normal, values"]),
    ("values-count", edit("init: ones", "init: {values: [1, 2, 3]}"), 6,
     "args.x.array.init.values", ["values hold 3 elements", "shape [8] needs 8"]),
    ("values-nested-shape", edit("init: ones", "init: {values: [[1, 2, 3, 4], [5, 6, 7, 8]]}"),
     6, "args.x.array.init.values", ["values have shape [2, 4]", "shape is [8]"]),
    ("bad-dtype", edit("shape: [8], dtype: float32}", "shape: [8], dtype: float128}"), 5,
     "args.out.array.dtype", ["bad value 'float128'"]),
    ("bad-shape", edit("shape: [8], dtype: float32}", "shape: [-1], dtype: float32}"), 5,
     "args.out.array.shape[0]", ["must be >= 0"]),
    ("layout-two-ways", edit("init: ones", "layout: {offset: 1, strides: [2]}"), 6,
     "args.x.array.layout", ["exactly one of strides, transpose, broadcast, offset"]),
    ("layout-strides-rank", edit("init: ones", "layout: {strides: [2, 1]}"), 6,
     "args.x.array.layout.strides", ["one entry per dimension"]),
    ("layout-broadcast-misfit", edit("init: ones", "layout: {broadcast: [3]}"), 6,
     "args.x.array.layout.broadcast", ["stored shape [3] cannot be broadcast", "shape [8]"]),
    ("layout-broadcast-values", edit("init: ones", "init: {values: [1, 2]}, layout: {broadcast: [1]}"),
     6, "args.x.array.init.values", ["values hold 2 elements but shape [1] needs 1"]),
    ("shadow-on-const", edit("init: ones}}", "init: ones}, shadow: {init: ones}}"), 6,
     "args.x.shadow", ["'shadow' needs an array argument"]),
    ("duplicate-top-level-key", BASE + "kernel: kernels/k.py:add\n", 8, "kernel",
     ["duplicate key 'kernel'", "first given on line 2"]),
    ("duplicate-nested-key",
     edit("init: ones}}", "init: ones}, activity: const,\n     activity: duplicated}"),
     7, "args.x.activity", ["duplicate key 'activity'", "line 6"]),
    ("non-string-key", BASE + "1: one\n", 8, "1", ["keys must be text"]),
    ("yaml-syntax-error", edit("launch: {threads: 8}", "launch: {threads: 8"), 4, "launch",
     ["invalid YAML", "flow mapping", "line 3"]),
    ("yaml-bad-indent", edit("  x:", "   x:"), 6, "args", ["invalid YAML"]),
    ("empty-file", "", 1, None, ["empty"]),
    ("comments-only", "# nothing here\n", 1, None, ["empty"]),
    ("top-level-list", "- id: a\n- id: b\n", 1, None, ["is a mapping", "not a list"]),
    ("two-documents", BASE + "---\n" + BASE, 8, None, ["invalid YAML", "single document"]),
    ("python-tag", BASE + "title: !!python/object:os.system {}\n", 8, None,
     ["invalid YAML", "constructor"]),
    ("kernel-launch-missing", edit("launch: {threads: 8}\n", ""), 1, "launch",
     ["needs {threads: N} or {grid: G, block: B}"]),
    ("grid-without-block", edit("{threads: 8}", "{grid: 8}"), 3, "launch.grid",
     ["grid without block"]),
    ("threads-and-grid", edit("{threads: 8}", "{threads: 8, grid: 1, block: 8}"), 3,
     "launch.threads", ["not both"]),
    ("too-many-dims", edit("{threads: 8}", "{threads: [1, 2, 3, 4]}"), 3, "launch.threads",
     ["at most 3 items"]),
    ("block-too-many-threads", edit("{threads: 8}", "{grid: [1, 1], block: [1024, 2]}"), 3, "launch.block",
     ["a block of 2048 threads", "at most 1024"]),
    ("block-z-too-deep", edit("{threads: 8}", "{threads: 4096, block: [4, 4, 65]}"), 3, "launch.block",
     ["block dimension z = 65", "at most 64"]),
    ("bad-mode", BASE + "modes: [forward, backward]\n", 8, "modes[1]",
     ["bad value 'backward'", "primal, forward, reverse"]),
    ("bad-dtypes", BASE + "dtypes: [float16]\n", 8, "dtypes[0]", ["bad value 'float16'"]),
    ("seed-bool", BASE + "seed: true\n", 8, "seed", ["expected an integer", "boolean"]),
    ("bad-tag", BASE + "tags: [Fast]\n", 8, "tags[0]", ["lowercase", "'Fast'"]),
    ("bad-expect-word", BASE + "expect: fail\n", 8, "expect", ["'pass', 'unsupported'"]),
    ("xfail-without-reason", BASE + "expect: {xfail: {strict: false}}\n", 8,
     "expect.xfail.reason", ["missing required key 'reason'"]),
    ("xfail-crash-with-state", BASE + "expect: {xfail: {reason: r, crash: true, state: FAIL}}\n", 8,
     "expect.xfail.state", ["names no failing state"]),
    ("expect-two-kinds", BASE + "expect:\n  error: {type: X}\n  xfail: {reason: r}\n", 8,
     "expect", ["exactly one of error, xfail, unsupported"]),
    ("bad-match-regex", BASE + "expect: {error: {type: KernelError, match: '(x'}}\n", 8,
     "expect.error.match", ["not a valid regular expression"]),
    ("bad-engine-option", BASE + "engine: {launch: fused}\n", 8, "engine.launch",
     ["bad value 'fused'", "split, packed"]),
    ("unknown-engine-key", BASE + "engine: {turbo: true}\n", 8, "engine.turbo",
     ["unknown key 'turbo'", "fold_constants"]),
    ("bad-ptx-mode", BASE + "ptx: {backward: {atomics: 0}}\n", 8, "ptx.backward",
     ["unknown key 'backward'"]),
    ("bad-ptx-fact", BASE + "ptx: {reverse: {atomics: {most: 1}}}\n", 8,
     "ptx.reverse.atomics.most", ["unknown key 'most'", "max, min"]),
    ("bad-job-mode", BASE + "jobs:\n  - {function: f}\n  - {mode: sideways}\n", 10,
     "jobs[1].mode", ["bad value 'sideways'"]),
    ("nested-unknown-shadow",
     BASE + "check: {nested: {function: kernels/k.py:two, mode: reverse, "
            "args: {x: {shadow: q}}}}\n", 8, "check.nested.args.x.shadow",
     ["nested shadow 'q'", "out, x, y"]),
    ("variant-unknown-key", BASE + "variants:\n  v1:\n    colour: red\n", 10,
     "variants.v1.colour", ["unknown key 'colour'", "other than id and variants"]),
    ("variant-overrides-id", BASE + "variants:\n  v1:\n    id: other\n", 10, "variants.v1.id",
     ["unknown key 'id'"]),
    ("variant-bad-name", BASE + "variants:\n  Big:\n    seed: 1\n", 9, "variants.Big",
     ["bad name 'Big'"]),
    ("variant-bad-value", BASE + "variants:\n  v1:\n    seed: 1\n    modes: [sideways]\n", 11,
     "variants.v1.modes[0]", ["bad value 'sideways'"]),
    ("variant-breaks-base-args", BASE + "variants:\n  v1:\n    seed: 1\n  v2:\n"
                                        "    kernel: kernels/k.py:two\n", 11, "variants.v2",
     ["with variant 'v2' applied", "key 'args.out'", "two(a, b)"]),
    ("variant-launch-semantics", BASE
     + "variants:\n  v1:\n    launch: {style: kernel}\n", 10, "variants.v1.launch",
     ["needs {threads: N}"]),
]


@pytest.mark.parametrize("text, line, key, substrings",
                         [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_malformed_case_names_file_line_and_key(project, text, line, key, substrings):
    with pytest.raises(CaseError) as info:
        load(project, text)
    error = info.value
    message = str(error)
    assert error.file == "cases/c.yaml"
    assert error.line == line, message
    assert error.key == key, message
    assert message.startswith(f"cases/c.yaml:{line}: "), message
    if key:
        assert f"key '{key}'" in message
    for substring in substrings:
        assert substring in message, message


def test_first_error_in_file_order_wins(project):
    text = edit("normal}, activity: duplicated", "normal}, activity: nope") + "colour: red\n"
    text = text.replace("id: add-case", "id: Bad Id")
    with pytest.raises(CaseError) as info:
        load(project, text)
    assert (info.value.line, info.value.key) == (1, "id")


def test_error_message_matches_documented_form(project):
    """The shape promised in docs/case-format.md, character for character."""
    with pytest.raises(CaseError) as info:
        load(project, edit("normal}, activity: duplicated}", "normal}, activty: duplicated}"))
    assert str(info.value).startswith(
        "cases/c.yaml:7: key 'args.y.activty': unknown key 'activty' (allowed: array, scalar, "
        "type, function, rng_states, alias, activity, width, shadow)")


def test_unreadable_file_is_a_case_error(project):
    with pytest.raises(CaseError, match="cannot read"):
        load_case_file(project / "cases" / "missing.yaml", project)


def test_kernel_that_does_not_parse(project):
    (project / "kernels" / "broken.py").write_text("def add(out, x, y:\n")
    with pytest.raises(CaseError) as info:
        load(project, edit("k.py:add", "broken.py:add"))
    assert (info.value.line, info.value.key) == (2, "kernel")
    assert "does not parse" in str(info.value)


def test_symlink_out_of_root_is_rejected(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "k.py").write_text(KERNELS)
    (project / "kernels" / "link.py").symlink_to(outside / "k.py")
    with pytest.raises(CaseError, match="outside the project root"):
        load(project, edit("k.py:add", "link.py:add"))


# ----------------------------------------------------------------------------- variants

VARIANTS = BASE + """\
title: base title
seed: 3
variants:
  packed:
    engine: {launch: packed}
    expect:
      error: {type: MixedActivityError, match: "packed argument .* (x|y)"}
  f64-only:
    dtypes: [float64]
    args:
      out: {array: {shape: [2], dtype: float64}, activity: duplicated}
      x: {array: {shape: [2], dtype: float64}}
      y: {scalar: {value: 1.5}, activity: active}
"""


def test_variants_become_cases_with_merged_keys(project):
    base, packed, f64 = load(project, VARIANTS)
    assert base.variant is None and base.variant_names == ("packed", "f64-only")
    assert base.expect.kind == "pass" and base.engine == {}

    assert (packed.variant, packed.line, packed.variant_names) == ("packed", 11, ())
    assert packed.id == base.id and packed.source == base.source
    assert packed.engine == {"launch": "packed"}
    assert packed.expect == Expectation(kind="error", error_type="MixedActivityError",
                                        match="packed argument .* (x|y)")
    assert (packed.args, packed.title, packed.seed) == (base.args, "base title", 3)

    assert (f64.variant, f64.line) == ("f64-only", 15)
    assert f64.dtypes == ("float64",)
    # `args` is replaced as a whole (shallow override), with the variant's own lines.
    assert [(a.name, a.kind, a.line) for a in f64.args] == [
        ("out", "array", 18), ("x", "array", 19), ("y", "scalar", 20)]
    assert f64.args[2].activity == "active"
    assert f64.engine == {} and f64.expect.kind == "pass"


# ----------------------------------------------------------------------------- expansion

def test_expand_runs_orders_modes_then_dtypes(project):
    text = VARIANTS + "modes: [primal, reverse]\ndtypes: [float32, float64]\n"
    base, packed, f64 = load(project, text)
    assert [r.run_id for r in expand_runs(packed, "sim")] == [
        "cases/c.yaml::packed-primal-float32", "cases/c.yaml::packed-primal-float64",
        "cases/c.yaml::packed-reverse-float32", "cases/c.yaml::packed-reverse-float64"]
    runs = expand_runs(base, "ptx")
    assert [(r.mode, r.dtype, r.backend) for r in runs] == [
        ("primal", "float32", "ptx"), ("primal", "float64", "ptx"),
        ("reverse", "float32", "ptx"), ("reverse", "float64", "ptx")]
    assert all(r.case is base for r in runs)
    assert [r.run_id for r in expand_runs(f64, "sim")] == [
        "cases/c.yaml::f64-only-primal-float64", "cases/c.yaml::f64-only-reverse-float64"]


def test_expand_runs_with_declared_dtypes(project):
    [case] = load(project, BASE)
    assert [r.run_id for r in expand_runs(case, "cuda")] == [
        "cases/c.yaml::forward", "cases/c.yaml::reverse"]


def test_apply_dtype_recasts_floats_only(project):
    text = """\
id: mixed
kernel: kernels/k.py:mix
launch: {threads: 4}
args:
  out: {array: {shape: [4], dtype: float32}, activity: duplicated}
  half: {array: {shape: [4], dtype: float16}}
  idx: {array: {shape: [4], dtype: int32}}
  flag: {array: {shape: [4], dtype: bool}}
  z: {array: {shape: [4], dtype: complex64}}
  a: {scalar: {value: 2.0}, activity: active}
  n: {scalar: {value: 4}}
  t: {type: numpy.float32}
"""
    [case] = load(project, text)
    assert apply_dtype(case, None) is case.args

    recast = {a.name: a for a in apply_dtype(case, "float64")}
    assert recast["out"].array == ArraySpec(shape=(4,), dtype="float64", init="zeros")
    assert recast["half"].array.dtype == "float64"
    assert recast["a"].dtype == "float64" and recast["a"].value == 2.0
    for name, dtype in [("idx", "int32"), ("flag", "bool"), ("z", "complex64")]:
        assert recast[name].array.dtype == dtype            # not floats: untouched
    assert recast["n"].dtype == "int64"
    assert recast["t"] == case.args[-1]

    recast = {a.name: a for a in apply_dtype(case, "float32")}
    assert (recast["out"].array.dtype, recast["a"].dtype) == ("float32", "float32")
    assert case.args[5].dtype == "float64"                   # the case itself is unchanged
    with pytest.raises(ValueError):
        apply_dtype(case, "int32")


# ----------------------------------------------------------------------------- the schema itself

def test_schema_is_valid_draft_2020_12():
    Draft202012Validator.check_schema(case_schema())
    on_disk = Path(__file__).parents[2] / "harness" / "cases" / "schema.json"
    assert json.loads(on_disk.read_text()) == case_schema()


def test_schema_defaults_agree_with_the_records():
    """Defaults live in the dataclasses; the schema's `default` annotations must not drift."""
    defs = case_schema()["$defs"]
    check = defs["check"]["properties"]
    assert defs["modes"]["default"] == list(Case.modes)
    assert defs["seed"]["default"] == Case.seed
    assert defs["expect"]["default"] == Expectation.kind
    assert defs["activity"]["default"] == ArgSpec.activity
    assert defs["init"]["default"] == ArraySpec.init
    assert defs["launch"]["properties"]["style"]["default"] == LaunchSpec.style
    assert check["dot"]["default"] == CheckSpec.dot
    assert check["repeat"]["default"] == CheckSpec.repeat
    assert check["zero_guard"]["default"] == CheckSpec.zero_guard
    assert check["fd"]["else"]["properties"]["directions"]["default"] == FDSpec.directions
    assert (defs["expect_one"]["else"]["properties"]["xfail"]["properties"]["strict"]["default"]
            == Expectation.strict)


def test_schema_closes_every_mapping():
    """Unknown keys are errors everywhere: every object schema says additionalProperties."""
    def walk(node, where):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                assert "additionalProperties" in node, where
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")
    walk(case_schema(), "#")


def test_loader_imports_neither_numba_nor_numpy():
    code = ("import sys, harness.cases; "
            "print(sorted(m for m in ('numba', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_documentation_mentions_every_schema_key():
    doc = (Path(__file__).parents[2] / "docs" / "case-format.md").read_text()

    def keys(node):
        if isinstance(node, dict):
            yield from node.get("properties", {})
            for value in node.values():
                yield from keys(value)
        elif isinstance(node, list):
            for value in node:
                yield from keys(value)
    code_spans = re.findall(r"`[^`\n]+`", doc)
    missing = sorted({k for k in keys(case_schema())
                      if not any(re.search(rf"\b{k}\b", span) for span in code_spans)})
    assert not missing, f"undocumented keys: {missing}"


def test_documented_examples_load(project):
    """The complete examples in docs/case-format.md are valid cases."""
    doc = (Path(__file__).parents[2] / "docs" / "case-format.md").read_text()
    blocks = [b.split("```", 1)[0] for b in doc.split("```yaml\n")[1:]]
    examples = [b for b in blocks if b.startswith("id: ")]
    native = [b for b in examples if b.startswith("id: native-")]
    examples = [b for b in examples if b not in native]
    assert len(examples) == 2 and len(native) == 1
    (project / "kernels" / "native").mkdir()
    (project / "kernels" / "native" / "warp_583_component_store.py").write_text("def vectest(x, y):\n    pass\n")
    (case,) = load_case_file(write_case(project, native[0], "native.yaml"), project)
    assert case.kernel is None and set(case.native) == {"warp"}
    (project / "kernels" / "broadcast.py").write_text("def add(x, y):\n    return x + y\n")
    (project / "kernels" / "nested.py").write_text(
        "def f(A):\n    A[0] *= A[0]\n\n\ndef df(A, dA):\n    pass\n")
    broadcast, nested = (load_case_file(write_case(project, text, f"ex{i}.yaml"), project)
                         for i, text in enumerate(examples))
    assert [c.variant for c in broadcast] == [None, "packed"]
    assert len(expand_runs(broadcast[0], "sim")) == 4
    assert broadcast[1].expect.error_type == "MixedActivityError"
    assert nested[0].check.nested["args"] == {"A": {"shadow": "dA"}}
    assert nested[1].engine == {"nested_config": "native"}


# ----------------------------------------------------------------------------- engines: expect by mode

def test_an_engines_expectation_may_be_keyed_by_mode(project):
    """The schema allowed it and the loader crashed on it (ValueError, shown as a malformed file)."""
    [case] = load(project, BASE + 'engines:\n  warp: {expect: {forward: pass, reverse: {xfail: {reason: "known"}}}}\n')
    runs = {(r.engine, r.mode): r for r in expand_runs(case, "sim", ("bundled", "warp"))}
    assert runs["warp", "forward"].case.expect == Expectation(kind="pass")
    assert runs["warp", "reverse"].case.expect.kind == "xfail" and runs["warp", "reverse"].case.expect.reason == "known"
    assert runs["bundled", "reverse"].case.expect == Expectation(kind="pass")


def test_an_engines_expectation_by_mode_names_every_mode_the_case_runs(project):
    with pytest.raises(CaseError, match=r"engines\.warp\.expect.*missing: forward"):
        load(project, BASE + 'engines:\n  warp: {expect: {reverse: {xfail: {reason: "known"}}}}\n')
