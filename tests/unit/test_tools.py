"""`harness new`, `harness show` and `harness reduce` (harness/tools/)."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from harness.cli import main
from harness.tools.new import analyse, case_yaml, find_function

ROOT = Path(__file__).resolve().parents[2]

KERNELS = '''\
import math

from numba import cuda


def gather_scale(out, x, idx, alpha, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = alpha * x[idx[i]]


def stencil(out, x, w, d, steps):
    l = cuda.grid(1)
    if l >= d and l < x.shape[0] - d:
        acc = 0.0
        for k in range(steps):
            acc += w[k] * x[l - d]
        out[l] = acc


def plane(out, x, s):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = s * x[j, i]


def histogram(out, x, bins):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, bins[i], x[i] * x[i])


def tile_sums(out, x):
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        cuda.atomic.add(out, (i % 2, j % 3), x[i, j])


def csr_spmv(out, ptr, cols, vals, x, n):
    row = cuda.grid(1)
    if row < n:
        acc = 0.0
        for k in range(ptr[row], ptr[row + 1]):
            acc += vals[k] * x[cols[k]]
        out[row] = acc


def cubic(out, x, c):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = c[0] + x[i] * (c[1] + x[i] * (c[2] + x[i] * c[3]))


def noisy(out, x, states):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * x[i] + 0.1 * xoroshiro128p_normal_float64(states, i)


def noisy_plane(out, rng_states):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = out[i, j] * cuda.random.xoroshiro128p_uniform_float32(rng_states, i * 16 + j)


def _private_scale(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = 2.0 * x[i]


def finding(out, x, y, c):
    i = cuda.grid(1)
    if i < out.shape[0]:
        t = math.sin(x[i]) * y[i]
        t = t + math.exp(0.5 * x[i]) * c
        out[i] = t * t
'''


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project of its own (the tools work on the current directory's project)."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "mine.py").write_text(KERNELS)
    (tmp_path / "cases").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def args_of(text: str) -> dict[str, str]:
    return {line.split(":")[0].strip(): line for line in text.splitlines() if line.startswith("  ")}


def test_new_reads_activities_from_signature_and_body(project):
    gather = case_yaml(analyse(find_function(project / "kernels/mine.py", "gather_scale")),
                       "kernels/mine.py:gather_scale", "gather-scale")
    lines = args_of(gather)
    assert "dtype: int32, init: arange}, activity: const" in lines["idx"]          # indexes x: Const
    assert "dtype: float64, init: normal}, activity: duplicated" in lines["x"]
    assert "init: zeros}, activity: duplicated" in lines["out"]                    # written only
    assert "{scalar: {value: 1.5, dtype: float64}, activity: active}" in lines["alpha"]
    assert "{scalar: {value: 64, dtype: int32}, activity: const}" in lines["n"]    # bound: launch size
    assert "launch: {threads: 64, block: 64}" in gather

    stencil = args_of(case_yaml(analyse(find_function(project / "kernels/mine.py", "stencil")),
                                "kernels/mine.py:stencil", "stencil"))
    assert "{value: 1, dtype: int32}" in stencil["d"]                              # index offset
    assert "{value: 4, dtype: int32}" in stencil["steps"]                          # range() count

    histogram = args_of(case_yaml(analyse(find_function(project / "kernels/mine.py", "histogram")),
                                  "kernels/mine.py:histogram", "histogram"))
    assert "dtype: int32, init: arange}, activity: const" in histogram["bins"]     # an atomic's index
    assert "shape: [64]," in histogram["out"]

    tiles = args_of(case_yaml(analyse(find_function(project / "kernels/mine.py", "tile_sums")),
                              "kernels/mine.py:tile_sums", "tile-sums"))
    assert "shape: [16, 16]," in tiles["out"]                                     # rank from (i % 2, j % 3)

    plane = case_yaml(analyse(find_function(project / "kernels/mine.py", "plane")), "kernels/mine.py:plane", "plane")
    assert "launch: {threads: [16, 16], block: [8, 8]}" in plane
    assert "shape: [16, 16]" in args_of(plane)["x"]


def test_new_types_loop_bound_arrays_as_integers_and_sizes_literal_indexed_arrays(project):
    spmv = args_of(case_yaml(analyse(find_function(project / "kernels/mine.py", "csr_spmv")),
                             "kernels/mine.py:csr_spmv", "csr_spmv"))
    assert "dtype: int32" in spmv["ptr"] and "activity: const" in spmv["ptr"] and "bounds a loop" in spmv["ptr"]
    assert "dtype: int32" in spmv["cols"] and "dtype: float64" in spmv["vals"] and "duplicated" in spmv["vals"]
    assert "dtype: int32" in spmv["n"]
    assert "shape: [65]" in spmv["ptr"] and "shape: [64]" in spmv["cols"]     # ptr[row + 1] for 64 rows
    cubic = args_of(case_yaml(analyse(find_function(project / "kernels/mine.py", "cubic")),
                              "kernels/mine.py:cubic", "cubic"))
    assert "shape: [4]" in cubic["c"] and "duplicated" in cubic["c"]      # c[0] .. c[3]: 4 long
    assert "shape: [64]" in cubic["x"]
    stencil = args_of(case_yaml(analyse(find_function(project / "kernels/mine.py", "stencil")),
                                "kernels/mine.py:stencil", "stencil"))
    assert "shape: [64]" in stencil["w"]          # indexed by a loop variable: sized as before


def test_new_gives_a_generator_state_array_an_rng_states_argument(project):
    from harness.cases import load_case_file
    text = case_yaml(analyse(find_function(project / "kernels/mine.py", "noisy")), "kernels/mine.py:noisy", "noisy")
    lines = args_of(text)
    assert "{rng_states: {count: 64, seed: 1}}" in lines["states"] and "xoroshiro128p_normal_float64" in lines["states"]
    assert "activity: duplicated" in lines["x"]
    plane = args_of(case_yaml(analyse(find_function(project / "kernels/mine.py", "noisy_plane")),
                              "kernels/mine.py:noisy_plane", "noisy-plane"))
    assert "{rng_states: {count: 256, seed: 1}}" in plane["rng_states"]      # a state per thread of 16 x 16
    (project / "cases" / "noisy.yaml").write_text(text)
    case, = load_case_file(project / "cases" / "noisy.yaml", project)
    assert [a.array.dtype for a in case.args] == ["float64", "float64", "xoroshiro128p"]


def test_new_writes_the_case_runs_it_and_prints_the_result(project, capsys):
    assert main(["new", "kernels/mine.py:gather_scale", "--backend", "sim"]) == 0
    out = capsys.readouterr().out
    assert (project / "cases" / "gather-scale.yaml").is_file()
    assert "PASS        cases/gather-scale.yaml::forward on sim" in out
    assert "PASS        cases/gather-scale.yaml::reverse on sim" in out
    assert "generated reverse kernel: .cache/harness/generated/gather_scale__reverse_" in out
    assert main(["new", "kernels/mine.py:gather_scale"]) == 2                    # no silent overwrite
    assert "exists" in capsys.readouterr().out
    assert main(["new", "kernels/mine.py:nothing"]) == 2
    assert "has no top-level function 'nothing'" in capsys.readouterr().out


def test_new_drops_a_private_kernels_leading_underscore_from_the_id(project):
    # an id may not start with '-', which `_private_scale` would give with - for _
    from harness.cases import load_case_file
    assert main(["new", "kernels/mine.py:_private_scale", "--no-run"]) == 0
    case, = load_case_file(project / "cases" / "private-scale.yaml", project)
    assert case.id == "private-scale"


def test_show_prints_runs_arguments_and_generated_kernels(project, capsys):
    assert main(["new", "kernels/mine.py:gather_scale", "--no-run"]) == 0
    capsys.readouterr()
    assert main(["show", "gather-scale", "--backend", "sim"]) == 0
    out = capsys.readouterr().out
    assert "cases/gather-scale.yaml: gather-scale" in out
    assert "  cases/gather-scale.yaml::forward\n" in out and "  cases/gather-scale.yaml::reverse\n" in out
    assert "idx    const              array int32[64] init arange" in out
    assert "alpha  active             scalar float64 = 1.5" in out
    assert "generated kernel (forward): .cache/harness/generated/gather_scale__forward_" in out
    assert "state: PASS" in out
    assert main(["show", "cases/gather-scale.yaml::reverse", "--static"]) == 0
    static = capsys.readouterr().out
    assert "1 run:" in static and "generated kernel" not in static
    assert main(["show", "no-such-case"]) == 2


FINDING = """\
id: fuzz-finding-7
title: "a kernel fuzzer finding: a YAML case beside its kernel file"
kernel: findings/finding_7.py:finding
launch: {threads: 32, block: 16}
args:
  out: {array: {shape: [32], dtype: float64, init: zeros}, activity: duplicated}
  x:   {array: {shape: [32], dtype: float64, init: {uniform: [-1, 1]}}, activity: duplicated}
  y:   {array: {shape: [32], dtype: float64, init: normal}, activity: duplicated}
  c:   {scalar: {value: 0.5, dtype: float64}, activity: active}
modes: [forward, reverse]
"""


def test_reduce_a_finding_under_a_planted_bug(project, capsys):
    (project / "findings").mkdir()
    (project / "findings" / "finding_7.py").write_text(KERNELS)
    (project / "findings" / "finding-7.yaml").write_text(FINDING)
    assert main(["reduce", "findings/finding-7.yaml::reverse", "--mutant", "flip-sin-rule",
                 "-o", "cases/reduced", "--budget", "80"]) == 0
    out = capsys.readouterr().out
    assert "FAIL; failing fd-reverse" in out
    kernel = project / "cases/reduced/fuzz_finding_7_reverse_reduced.py"
    case = project / "cases/reduced/fuzz-finding-7-reverse-reduced.yaml"
    function = next(n for n in ast.parse(kernel.read_text()).body if isinstance(n, ast.FunctionDef))
    body = ast.unparse(function)
    assert len(body.splitlines()) <= 10, body
    assert "math.sin" in body and "math.exp" not in body and "y[" not in body     # the bug, nothing else
    assert [a.arg for a in function.args.args] == ["out", "x"]                    # unused arguments dropped
    assert "threads: 1" in case.read_text()                                      # launch and shapes shrunk
    assert "helper" not in kernel.read_text() and "def stencil" not in kernel.read_text()

    # the reproducer fails the same way under the mutant, and passes without it
    from harness.backends import get_backend
    from harness.cases import expand_runs, load_case_file
    from harness.selftest.mutants import get_mutant
    from harness.execution.runner import Runner
    from harness.tools.reduce import Signature
    run = expand_runs(load_case_file(case, project)[0], get_backend().name)[0]
    planted = Runner(project, "sim", seams=get_mutant("flip-sin-rule").seams()).execute(run)
    assert str(Signature.of(planted)) == "FAIL; failing fd-reverse"
    assert Runner(project, "sim").execute(run).state == "PASS"


def test_reduce_keeps_device_side_autodiff_calls_whole():
    """`Duplicated(out, dout)` -> `dout` would differentiate something else: no such edit is offered,
    while the differentiated expression's own parts still are."""
    from harness.tools.reduce import Candidate, expression_edits
    kernel = ast.parse(textwrap.dedent('''
        def kernel(out, dout, x, dx):
            i = cuda.grid(1)
            autodiff(Forward, f, Duplicated(out, dout), Duplicated(x, dx), Const(i + 1))
    ''')).body[0]
    offered = [text for text, _ in expression_edits(Candidate(kernel, {}))]
    assert not [t for t in offered if t.startswith(("`autodiff", "`Duplicated", "`Const"))], offered
    assert "`i + 1` -> `i`" in offered


def test_reduce_refuses_what_it_cannot_reduce(project, capsys):
    (project / "cases" / "fine.yaml").write_text(textwrap.dedent(FINDING).replace("findings/finding_7.py",
                                                                                  "kernels/mine.py"))
    assert main(["reduce", "cases/fine.yaml::reverse", "--budget", "5"]) == 2
    assert "does not fail (PASS); nothing to reduce" in capsys.readouterr().out
    assert main(["reduce", "cases/fine.yaml"]) == 2                             # a run, not a case
    assert main(["reduce", "cases/fine.yaml::reverse", "-o", "/tmp"]) == 2       # outside the project
