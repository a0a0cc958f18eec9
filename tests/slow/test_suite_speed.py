"""The suite's speed machinery: one compile per kernel in a process, a lock per kernel across
processes, work stealing as xdist's default, and the `--harness-profile` breakdown."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from harness.backends.base import CompileMemo
from harness.backends.compile_log import content_key
from harness.session.profile import SuiteProfile
from tests.conftest import ROOT


def _kernel(x):
    return x


def _other_kernel(x):
    return x


def test_memo_compiles_each_function_signature_and_config_once():
    memo, calls = CompileMemo(), []

    def compile_fn(fn):
        calls.append(fn)
        return object()
    a = memo.get(_kernel, ("float32[:]",), "cfg", compile_fn)
    assert memo.get(_kernel, ("float32[:]",), "cfg", compile_fn) is a
    assert memo.get(_kernel, ("float64[:]",), "cfg", compile_fn) is not a      # other types
    assert memo.get(_kernel, ("float32[:]",), "fastmath", compile_fn) is not a  # other configuration
    assert memo.get(_other_kernel, ("float32[:]",), "cfg", compile_fn) is not a  # other function
    assert len(calls) == 4
    assert [r.served for r in memo.log.records] == ["compiled", "memo", "compiled", "compiled", "compiled"]
    memo.forget()                             # a rebuilt device context: compile again
    memo.get(_kernel, ("float32[:]",), "cfg", compile_fn)
    assert len(calls) == 5


def test_memo_keeps_closures_apart():
    """Two closures share their code (file, line, name) but not their captured values: the memo is
    keyed by the function object, never by its source alone."""
    def make(k):
        def kernel(x):
            return x + k
        return kernel
    memo = CompileMemo()
    one = memo.get(make(1), ("i",), "cfg", lambda fn: "one")
    two = memo.get(make(2), ("i",), "cfg", lambda fn: "two")
    assert (one, two) == ("one", "two")


def test_generated_functions_with_the_same_code_share_one_compile(tmp_path, monkeypatch):
    """Generated modules whose code is the same and whose docstrings differ (the activities they
    list: a DuplicatedNoNeed array the kernel never writes gives the Duplicated array's code) are
    one kernel; a change in the code, the function, or a file outside the generated folder is not."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "generated"))
    from harness.engine.runtime.cache import load_function, write_module
    body = "def k__forward(x, d_x):\n    i = 0  # line 3\n    d_x[i] = x[i]\n"
    one = load_function(write_module("k__forward", '"""Activities: x: duplicated."""\n' + body), "k__forward")
    two = load_function(write_module("k__forward", '"""Activities: x: duplicated_no_need."""\n' + body.replace(
        "# line 3", "# another comment")), "k__forward")
    other = load_function(write_module("k__forward", '"""Activities: x: duplicated."""\n' + body.replace(
        "d_x[i] = x[i]", "d_x[i] = 2 * x[i]")), "k__forward")
    assert one.__code__.co_filename != two.__code__.co_filename
    memo, calls = CompileMemo(), []

    def compile_fn(fn):
        calls.append(fn)
        return object()
    first = memo.get(one, ("f",), "cfg", compile_fn)
    assert memo.get(two, ("f",), "cfg", compile_fn) is first
    assert memo.get(other, ("f",), "cfg", compile_fn) is not first
    assert memo.get(two, ("d",), "cfg", compile_fn) is not first
    assert len(calls) == 3
    assert content_key(one, ("f",), "cfg") == content_key(two, ("f",), "cfg") != content_key(other, ("f",), "cfg")
    assert [r.served for r in memo.log.records] == ["compiled", "memo", "compiled", "compiled"]
    # what is compiled is the function in a copy with a fixed docstring, the same for `one` and `two`
    # (so numba's disk cache serves both, in any process), its lines where they were
    from harness.backends.compile_log import shared_function
    shared = calls[0]
    assert shared is shared_function(two) and "__shared_" in shared.__code__.co_filename
    assert shared.__code__.co_firstlineno == one.__code__.co_firstlineno and shared.__code__.co_code == one.__code__.co_code
    # outside the generated folder, files are told apart even when their code is the same
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(f'"""{name}"""\n' + body)
    plain = [load_function(tmp_path / f"{name}.py", "k__forward") for name in ("a", "b")]
    assert memo.get(plain[0], ("f",), "cfg", compile_fn) is not memo.get(plain[1], ("f",), "cfg", compile_fn)
    assert calls[-2:] == plain                     # compiled as they are


def test_content_key_names_the_kernel_the_same_way_in_every_process():
    key = content_key(_kernel, ("float32[:]",), "cfg")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from tests.slow.test_suite_speed import _kernel; "
            "from harness.backends.compile_log import content_key; print(content_key(_kernel, ('float32[:]',), 'cfg'))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.stdout.strip() == key
    assert content_key(_kernel, ("float64[:]",), "cfg") != key
    assert content_key(_other_kernel, ("float32[:]",), "cfg") != key


def test_compile_lock_serialises_one_function(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "generated"))
    from harness.backends.compile_lock import compiling
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); from tests.slow.test_suite_speed import _kernel; "
            "from harness.backends.compile_lock import compiling\n"
            "with compiling(_kernel):\n    print('locked', flush=True); time.sleep(1.5)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(ROOT)], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**__import__('os').environ, "HARNESS_CACHE_DIR": str(tmp_path / "generated")})
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        with compiling(_other_kernel):         # another function: not held up
            assert time.monotonic() - t0 < 1.0
        with compiling(_kernel):               # the same function: waits for the holder
            waited = time.monotonic() - t0
        assert waited > 0.5
    finally:
        holder.wait(timeout=60)
    assert list((tmp_path / "locks").glob("*.lock"))


def test_profile_counts_compiles_repeats_and_workers():
    profile = SuiteProfile()
    run = lambda *kernels: {"kernels": [list(k) for k in kernels], "timings": {"oracles_s": 1.0}, "duration": 2.0}
    profile.add_run("a.yaml::forward", "gw0", run(("k1", "f", 0.5, "oracles", "compiled"),
                                                   ("k2", "f__reverse", 0.25, "relations", "compiled")))
    profile.add_run("a.yaml::reverse", "gw1", run(("k1", "f", 0.5, "oracles", "compiled"),
                                                   ("k2", "f__reverse", 0.0, "relations", "memo")))
    profile.add_run("b.yaml::reverse", "gw1", run(("k3", "g", 0.1, "run", "disk")))
    # a generated file whose code equals k3's file: served by k3's kernel, one more file
    profile.add_run("b.yaml::forward", "gw1", run(("k3", "g", 0.0, "relations", "memo", "k3-other-file")))
    profile.add_worker("gw0", {"startup_s": 1.0, "collection_s": 2.0})
    s = profile.summary()
    assert s["kernel_requests"] == 6 and s["distinct_kernels"] == 3 and s["distinct_kernel_files"] == 4
    assert s["served"] == {"compiled": 3, "memo": 2, "disk": 1}
    assert s["compiled_again"] == 1 and s["compiled_again_s"] == 0.5
    assert s["kernels_in_several_workers"] == 2
    assert s["compile_s_by_phase"] == {"oracles": 1.0, "relations": 0.25}
    assert s["runs_s_by_worker"] == {"gw0": 2.0, "gw1": 6.0}
    text = "\n".join(profile.lines())
    assert "distinct kernels: 3" in text and "4 by file" in text and "collection 2.00 / 2.00 s" in text


def test_case_suite_steals_work_and_prints_its_profile(tmp_path):
    """Under -n the suite schedules by work stealing unless --dist is given, and --harness-profile
    prints and writes the breakdown (one run per worker at least)."""
    def pytest(*extra):
        return subprocess.run([sys.executable, "-m", "pytest", "cases/axpy.yaml", "--backend", "sim", "-n", "2",
                               "-p", "no:cacheprovider", "-k", "primal", "--results", "", "--html", "", *extra],
                              cwd=ROOT, capture_output=True, text=True, timeout=600,
                              env={**__import__('os').environ, "HARNESS_CACHE_DIR": str(tmp_path / "generated")})
    out = pytest("-v", "--harness-profile", str(tmp_path / "profile.json"))
    assert out.returncode == 0, out.stdout[-2000:]
    assert "WorkStealingScheduling" in out.stdout
    assert "harness profile" in out.stdout and "distinct kernels: 2" in out.stdout
    written = json.loads((tmp_path / "profile.json").read_text())
    assert written["summary"]["runs"] == 2 and set(written["summary"]["workers"]) == {"gw0", "gw1"}
    assert all(w["collection_s"] > 0 for w in written["summary"]["workers"].values())
    explicit = pytest("-v", "--dist", "load")
    assert explicit.returncode == 0 and "LoadScheduling" in explicit.stdout and "harness profile" not in explicit.stdout


CASE = """id: cached-axpy
title: "out[i] = a * x[i] + y[i]"
kernel: kernels/elementwise.py:axpy
launch: {threads: 64, block: 32}
args:
  out: {array: {shape: [64], dtype: float32, init: zeros}, activity: duplicated}
  a:   {scalar: {value: 2.0, dtype: float32}, activity: active}
  x:   {array: {shape: [64], dtype: float32, init: normal}, activity: duplicated}
  y:   {array: {shape: [64], dtype: float32, init: normal}, activity: duplicated}
modes: [forward]
"""


def test_load_cache_serves_an_identical_file_without_parsing_or_validating(tmp_path, monkeypatch):
    from harness.cases import loader
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache" / "generated"))
    case = tmp_path / "cases" / "cached.yaml"
    case.parent.mkdir()
    case.write_text(CASE)
    first = loader.load_case_file(case, ROOT, cache=True)

    def refuse(*args):
        raise AssertionError("parsed or validated again")
    with monkeypatch.context() as m:
        m.setattr(loader, "_parse_yaml", refuse)
        m.setattr(loader, "_validator", refuse)
        again = loader.load_case_file(case, ROOT, cache=True)
    assert again == first
    case.write_text(CASE.replace("2.0", "3.0"))          # another text: parsed and validated afresh
    changed = loader.load_case_file(case, ROOT, cache=True)
    assert changed[0].args != first[0].args


def test_load_cache_keeps_no_failures(tmp_path, monkeypatch):
    """A malformed file gets the loader's own error every time (nothing of it is cached)."""
    from harness.cases import loader
    from harness.core.errors import CaseError
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache" / "generated"))
    case = tmp_path / "cases" / "bad.yaml"
    case.parent.mkdir()
    for text in (CASE.replace("modes: [forward]", "modes: [sideways]"), CASE + "  z: [1, 2\n"):
        case.write_text(text)
        errors = []
        for _ in range(2):
            try:
                loader.load_case_file(case, ROOT, cache=True)
            except CaseError as exc:
                errors.append(str(exc))
        assert len(errors) == 2 and errors[0] == errors[1]


def test_the_primal_runs_numba_twin_is_kept_in_a_module_copy(launching_backend, kernels):
    """The primal reference's numba.cuda.jit twin compiles a copy of the kernel's module in the
    generated folder (content addressed) with numba's on-disk cache, once per process, so a warm
    suite loads it; never the kernel's own file, whose cache index the engine's compile uses."""
    from harness.engine.runtime.cache import cache_dir
    from harness.checks.primal_reference import numba_twin
    direct, fn = numba_twin(kernels.axpy)
    assert numba_twin(kernels.axpy)[0] is direct
    assert fn.__code__.co_code == kernels.axpy.__code__.co_code
    assert fn.__code__.co_filename != kernels.axpy.__code__.co_filename
    assert Path(fn.__code__.co_filename).parent.resolve() == cache_dir().resolve()
