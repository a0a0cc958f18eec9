"""Loading a case file is safe and bounded: no case runs code, no case
exhausts the machine, every bad input is a CaseError naming file, line and key, nothing invalid is
accepted. Each test builds a tiny project in tmp_path; numba is not imported.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cases import CaseError, load_case_file
from harness.model import ArgSpec

KERNELS = '''\
def add(out, x, y):
    out[0] = x[0] + y[0]


def convert_to(T, a):
    return T(a)
'''

# 1 id, 2 kernel, 3 launch, 4 args, 5 out, 6 x, 7 y
BASE = """\
id: add-case
kernel: kernels/k.py:add
launch: {threads: 8}
args:
  out: {array: {shape: [8], dtype: float32}, activity: duplicated}
  x: {array: {shape: [8], dtype: float32, init: ones}}
  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}
"""

# 1 id, 2 kernel, 3 launch, 4 args, 5 out, 6 T, 7 a
BROADCAST = """\
id: convert
kernel: kernels/k.py:convert_to
launch: {style: broadcast}
args:
  out: {array: {shape: [4], dtype: float32}, activity: duplicated}
  T: {type: TYPE}
  a: {array: {shape: [4], dtype: float32, init: normal}, activity: duplicated}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNELS)
    (tmp_path / "cases").mkdir()
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["harness.session.plugin"]\n')
    return tmp_path


def write(project: Path, text: str | bytes, name: str = "c.yaml") -> Path:
    path = project / "cases" / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def refused(project: Path, text: str | bytes, name: str = "c.yaml") -> CaseError:
    with pytest.raises(CaseError) as info:
        load_case_file(write(project, text, name), project)
    return info.value


def edit(old: str, new: str, base: str = BASE) -> str:
    assert base.count(old) == 1, old
    return base.replace(old, new)


# ----------------------------------------------------------------------------- 1. type: allow-list

@pytest.mark.parametrize("name", ["os._exit", "time.sleep", "os.system", "builtins.eval",
                                  "numpy.load", "numpy.testing", "this.s", "eval", "type"])
def test_type_outside_the_allow_list_is_refused_at_load(project, name):
    error = refused(project, edit("TYPE", name, BROADCAST))
    assert (error.file, error.line, error.key) == ("cases/c.yaml", 6, "args.T.type")
    assert f"'{name}' is not an allowed type" in str(error)
    assert "this" not in sys.modules or name != "this.s"


@pytest.mark.parametrize("name, expected", [("float", float), ("int", int), ("bool", bool),
                                            ("numpy.float64", "float64"), ("numpy.int32", "int32")])
def test_allowed_types_load_and_resolve_to_the_type(project, name, expected):
    import numpy as np
    from harness.cases.inputs import build_args
    case = load_case_file(write(project, edit("TYPE", name, BROADCAST)), project)[0]
    value = build_args(case.args, 0, project)[1].value
    assert value is (expected if isinstance(expected, type) else getattr(np, expected))


def test_resolving_a_type_never_imports_a_module(project):
    """Defence in depth: a record that bypassed the loader still cannot reach a module."""
    from harness.cases.inputs import build_args
    before = set(sys.modules)
    for name in ("this.s", "os._exit", "antigravity.geohash"):
        with pytest.raises(CaseError, match="not an allowed type"):
            build_args((ArgSpec(name="T", kind="type", value=name),), 0, project)
    assert set(sys.modules) - before == set()


def test_a_case_with_type_os_exit_does_not_end_pytest(project):
    """Before: `T: {type: os._exit}` ended the pytest process (exit 7, no results)."""
    write(project, edit("TYPE", "os._exit", BROADCAST))
    results = project / "results.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "cases", "-q", "-p", "no:cacheprovider", "--backend", "sim",
         "--rootdir", str(project), "--results", str(results), "--html", ""],
        cwd=project, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cases/c.yaml:6: key 'args.T.type': 'os._exit' is not an allowed type" in proc.stdout
    assert "ERROR" in results.read_text()


# ----------------------------------------------------------------------------- 6. load limits

def load_in_thread(path: Path, root: Path, seconds: float = 20.0):
    """Load, failing the test (not hanging it) if the loader blocks: a FIFO used to hang it."""
    import threading
    box: dict = {}

    def target():
        try:
            box["value"] = load_case_file(path, root)
        except BaseException as exc:                        # noqa: BLE001 - reported below
            box["error"] = exc
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"loading {path} blocked"
    return box


def test_alias_bomb_is_refused_before_expansion(project):
    """Before: 592 bytes took 29 s and 2.2 GB (one level more: about 20 GB)."""
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 10)]
    text = BASE + "\n".join("# " + line for line in ()) + "bomb:\n" + "".join(f"  {line}\n" for line in levels)
    error = refused(project, text)
    assert "more than 100000 YAML nodes once aliases are expanded" in str(error)
    assert error.file == "cases/c.yaml" and error.line is not None and error.key.startswith("bomb.")


def test_recursive_alias_is_refused(project):
    error = refused(project, BASE + "tags: &t [a, *t]\n")
    assert (error.line, error.key) == (8, "tags[1]") and "refers to a node that contains it" in str(error)


def test_oversized_file_is_refused_without_parsing(project):
    error = refused(project, BASE + "description: |\n" + ("  " + "x" * 1000 + "\n") * 1100)
    assert "larger than 1048576 bytes" in str(error) and error.file == "cases/c.yaml"


def test_fifo_is_refused_without_blocking(project):
    fifo = project / "cases" / "pipe.yaml"
    os.mkfifo(fifo)
    box = load_in_thread(fifo, project)
    assert isinstance(box.get("error"), CaseError), box
    assert "not a regular file (a FIFO)" in str(box["error"])


def test_symlink_to_dev_zero_is_refused(project):
    link = project / "cases" / "zero.yaml"
    link.symlink_to("/dev/zero")
    box = load_in_thread(link, project)
    assert isinstance(box.get("error"), CaseError), box
    assert "not a regular file (a character device)" in str(box["error"])


def test_directory_named_like_a_case_is_refused(project):
    (project / "cases" / "dir.yaml").mkdir()
    error = refused_path(project, project / "cases" / "dir.yaml")
    assert "not a regular file (a directory)" in str(error)


def test_symlink_loop_is_a_case_error(project):
    loop = project / "cases" / "loop.yaml"
    loop.symlink_to(loop)
    error = refused_path(project, loop)
    assert error.file == "cases/loop.yaml" and "cannot read the case file" in str(error)


def refused_path(project: Path, path: Path) -> CaseError:
    with pytest.raises(CaseError) as info:
        load_case_file(path, project)
    return info.value


def test_deep_nesting_is_a_case_error_not_a_recursion_error(project):
    """Before: RecursionError at about 500 levels."""
    error = refused(project, BASE + "jobs: " + "[" * 600 + "]" * 600 + "\n")
    assert "nested deeper than 32 levels" in str(error)
    assert (error.line, error.key) == (8, "jobs" + "[0]" * 31)


def test_deep_nesting_in_block_style_is_refused(project):
    text = BASE + "check:\n" + "".join("  " * (n + 1) + f"k{n}:\n" for n in range(40)) + "  " * 41 + "v\n"
    error = refused(project, text)
    assert "nested deeper than 32 levels" in str(error) and error.key.startswith("check.k0.k1")


@pytest.mark.parametrize("arg, key", [
    ("{array: {shape: [5000, 5000], dtype: float32}, activity: duplicated}", "args.out"),
    ("{array: {shape: [8], dtype: float32, layout: {strides: [100000000]}}}", "args.out"),
    ("{array: {shape: [8], dtype: float32, layout: {offset: 100000000}}}", "args.out"),
    ("{array: {shape: [100000000], dtype: float32, layout: {broadcast: [1]}}, activity: duplicated}",
     "args.out"),
    ("{array: {shape: [99999999999999999], dtype: float32}}", "args.out"),
])
def test_total_elements_per_case_are_capped(project, arg, key):
    error = refused(project, edit("{array: {shape: [8], dtype: float32}, activity: duplicated}", arg))
    assert "need more than 16777216 elements" in str(error)
    assert (error.line, error.key) == (5, key)


def test_a_broadcast_view_of_a_small_array_stays_cheap(project):
    """Only storage and shadows count: a const broadcast view of one element is fine."""
    text = edit("{array: {shape: [8], dtype: float32}, activity: duplicated}",
                "{array: {shape: [4000, 4000], dtype: float32, layout: {broadcast: [1]}}}")
    assert load_case_file(write(project, text), project)


# ----------------------------------------------------------------------------- 7. no leaks, nothing invalid

@pytest.mark.parametrize("label, text, line, key, words", [
    # text that used to leak a Python exception or carry no line
    ("nul-escape", BASE + 'title: "a\\0b"\n', 8, "title", "control character (U+0000)"),
    ("nul-in-kernel", edit("kernels/k.py:add", '"kernels/k\\0.py:add"'), 2, "kernel", "U+0000"),
    ("raw-nul-byte", BASE + "title: a\x00b\n", 8, None, "U+0000 is not allowed"),
    ("raw-escape-byte", BASE + "title: a\x1bb\n", 8, None, "U+001B is not allowed"),
    ("c1-control", BASE + 'title: "a\\x9bb"\n', 8, "title", "control character (U+009B)"),
    ("lone-surrogate-title", BASE + 'title: "bad \\ud800 title"\n', 8, "title", "lone surrogate (U+D800)"),
    ("lone-surrogate-key", BASE + '"\\udc80": 1\n', 8, "\udc80", "lone surrogate (U+DC80)"),
    ("long-kernel-path", edit("kernels/k.py:add", "kernels/" + "a" * 5000 + ".py:add"), 2, "kernel",
     "cannot resolve kernel path"),
    ("long-key", edit("  y:", "  " + "y" * 300 + ":"), 7, "args." + "y" * 300, "key longer than 128"),
    ("long-text", BASE + "title: " + "t" * 70000 + "\n", 8, "title", "longer than 65536"),
    # floats in integer fields
    ("float-shape", edit("shape: [8], dtype: float32}, activity: duplicated",
                         "shape: [8.0], dtype: float32}, activity: duplicated"), 5,
     "args.out.array.shape[0]", "expected an integer, got a number (8.0)"),
    ("float-threads", edit("threads: 8", "threads: 8.0"), 3, "launch.threads", "(got a number (8.0))"),
    ("float-seed", BASE + "seed: 3.0\n", 8, "seed", "expected an integer"),
    ("float-width", edit("init: normal}, activity: duplicated",
                         "init: normal}, activity: batch_duplicated, width: 2.0"), 7, "args.y.width",
     "expected an integer"),
    ("float-int-scalar", edit("  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}",
                              "  y: {scalar: {value: 3.0, dtype: int32}}"), 7, "args.y.scalar.value",
     "int32 takes an integer (got 3.0)"),
    # non-finite numbers
    ("nan-rtol", BASE + "check: {fd: {rtol: .nan}}\n", 8, "check.fd.rtol", "nan is not a finite number"),
    ("inf-atol", BASE + "check: {fd: {atol: .inf}}\n", 8, "check.fd.atol", "inf is not a finite number"),
    ("inf-uniform", edit("init: normal}", "init: {uniform: [0, .inf]}}"), 7, "args.y.array.init.uniform[1]",
     "inf is not a finite number"),
    ("nan-normal", edit("init: normal}", "init: {normal: [.nan, 1]}}"), 7, "args.y.array.init.normal[0]",
     "nan is not a finite number"),
    ("nan-scalar", edit("  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}",
                        "  y: {scalar: {value: .nan}}"), 7, "args.y.scalar.value", "not a finite number"),
    ("inf-values", edit("init: ones}", "init: {values: [1, 1, 1, 1, 1, 1, 1, -.inf]}}"), 6,
     "args.x.array.init.values[7]", "-inf is not a finite number"),
    # out-of-range integers
    ("uint8-300", edit("  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}",
                       "  y: {scalar: {value: 300, dtype: uint8}}"), 7, "args.y.scalar.value",
     "300 is out of range for uint8 (0 to 255)"),
    ("int8-negative", edit("  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}",
                           "  y: {scalar: {value: -129, dtype: int8}}"), 7, "args.y.scalar.value",
     "out of range for int8"),
    ("int64-default", edit("  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}",
                           "  y: {scalar: {value: 9223372036854775808}}"), 7, "args.y.scalar.value",
     "out of range"),
    ("float32-huge", edit("  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}",
                          "  y: {scalar: {value: 1.0e39, dtype: float32}}"), 7, "args.y.scalar.value",
     "too large for float32"),
    ("float-scalar-at-run-dtype", edit("  y: {array: {shape: [8], dtype: float32, init: normal}, activity: duplicated}",
                                       "  y: {scalar: {value: 1.0e39}}") + "dtypes: [float32]\n", 7,
     "args.y.scalar.value", "a float32 scalar cannot hold"),
    ("uint8-values", edit("x: {array: {shape: [8], dtype: float32, init: ones}}",
                          "x: {array: {shape: [2], dtype: uint8, init: {values: [1, 300]}}}"), 6,
     "args.x.array.init.values", "300 is out of range for uint8"),
    ("int-values-fraction", edit("x: {array: {shape: [8], dtype: float32, init: ones}}",
                                 "x: {array: {shape: [2], dtype: int32, init: {values: [1, 2.5]}}}"), 6,
     "args.x.array.init.values", "int32 takes an integer (got 2.5)"),
    ("huge-seed", BASE + "seed: 100000000000000000000\n", 8, "seed", "out of range"),
])
def test_bad_input_is_a_case_error_with_line_and_key(project, label, text, line, key, words):
    error = refused(project, text)
    assert error.file == "cases/c.yaml", str(error)
    assert (error.line, error.key) == (line, key), str(error)
    assert words in str(error), str(error)


@pytest.mark.parametrize("tagged, words", [
    ("!!float fd", "'fd' is not a valid !!float"),           # was ValueError
    ("!!int abc", "'abc' is not a valid !!int"),              # was ValueError
    ("!!bool maybe", "'maybe' is not a valid !!bool"),        # was KeyError
    ("!!binary aGk=", "the tag !!binary is not allowed"),     # was bytes, a non-JSON type
    ("!!timestamp 2001-12-14", "the tag !!timestamp is not allowed"),
    ("!!set {a: null}", "the tag !!set is not allowed"),
    ("!!python/object/apply:os.system ['true']", "could not determine a constructor"),
])
def test_explicit_tags_are_checked_or_refused(project, tagged, words):
    error = refused(project, BASE + f"title: {tagged}\n")
    assert error.line == 8 and words in str(error), str(error)


def test_explicit_tags_that_fit_load(project):
    case = load_case_file(write(project, BASE + "seed: !!int 3\ntitle: !!str 12\n"), project)[0]
    assert (case.seed, case.title) == (3, "12")


@pytest.mark.parametrize("data, line, column", [
    (BASE.encode() + b"title: caf\xe9\n", 8, 11),
    (b"id: x\xff\n" + BASE.encode(), 1, 6),
])
def test_non_utf8_bytes_name_their_line(project, data, line, column):
    """Before: 'cannot read the case file: ... codec can't decode' with no line."""
    error = refused(project, data)
    assert error.line == line and f"not UTF-8 text: byte 0x" in str(error)
    assert f"at column {column}" in str(error)


def test_a_kernel_path_that_is_a_fifo_is_refused(project):
    os.mkfifo(project / "kernels" / "pipe.py")
    box = load_in_thread(write(project, edit("kernels/k.py:add", "kernels/pipe.py:add")), project)
    assert isinstance(box.get("error"), CaseError) and "does not exist" in str(box["error"])


def test_accepted_text_survives_the_results_writer(project, tmp_path):
    """A title the loader accepts must be writable as UTF-8 (a lone surrogate used to pass the
    loader and then crash the results writer with an INTERNALERROR)."""
    import json
    case = load_case_file(write(project, BASE + 'title: "caf\\u00e9 \\U0001F600 \\t tab"\n'), project)[0]
    json.dumps({"title": case.title}, ensure_ascii=False).encode("utf-8")


def test_a_path_with_a_nul_is_a_case_error(project):
    """Programmatic callers may pass any string: os.stat raised ValueError (embedded null byte)."""
    with pytest.raises(CaseError, match="cannot read the case file: embedded null byte"):
        load_case_file(str(project / "cases" / "a\0b.yaml"), project)
