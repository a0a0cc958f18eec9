"""Native kernels in cases (harness/adapters/native.py): a @wp.kernel or @ti.kernel given per engine
(`engines: {warp: {kernel: ...}}`), run as written with vector elements as trailing dimensions."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from harness.core.errors import CaseError, UnsupportedError

WARP_KERNELS = '''\
import warp as wp


@wp.kernel
def lengths(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(x[i])


@wp.func
def doubled_length(v: wp.vec3) -> float:
    return wp.length(v)


@wp.func_grad(doubled_length)
def adj_doubled_length(v: wp.vec3, adj_out: float):
    # planted: twice the right adjoint, so the oracles must see a wrong derivative
    wp.adjoint[v] += 2.0 * wp.normalize(v) * adj_out


@wp.kernel
def wrong_lengths(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = doubled_length(x[i])
'''

TAICHI_KERNELS = '''\
import taichi as ti


@ti.kernel
def lengths(x: ti.types.ndarray(dtype=ti.math.vec3, ndim=1), out: ti.types.ndarray(dtype=ti.f32, ndim=1)):
    for i in x:
        out[i] = x[i].norm()


@ti.kernel
def scaled(x: ti.template(), out: ti.template()):
    for i in x:
        out[i] = 3.0 * x[i]
'''


def _project(tmp_path, yaml: str):
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "kernels" / "wk.py").write_text(WARP_KERNELS)
    (tmp_path / "kernels" / "tk.py").write_text(TAICHI_KERNELS)
    (tmp_path / "kernels" / "nk.py").write_text("def lengths(x, out):\n    pass\n")
    (tmp_path / "cases").mkdir(exist_ok=True)
    path = tmp_path / "cases" / "c.yaml"
    path.write_text(textwrap.dedent(yaml))
    from harness.cases import load_case_file
    return load_case_file(path, tmp_path)


CASE = """\
    id: c
    engines:
      warp: {kernel: kernels/wk.py:lengths}
    launch: {threads: 5, block: 5}
    args:
      x: {array: {shape: [5, 3], dtype: float32, init: normal}, activity: duplicated}
      out: {array: {shape: [5], dtype: float32, init: zeros}, activity: duplicated}
    modes: [primal, reverse]
    dtypes: [float32]
    """


def test_a_case_may_give_native_kernels_only_and_the_bundled_engine_skips_it(tmp_path):
    from harness.adapters.expectations import expectation_for
    case, = _project(tmp_path, CASE)
    assert case.kernel is None and str(case.native["warp"]) == "kernels/wk.py:lengths"
    assert case.kernel_for("warp") == case.native["warp"] and case.kernel_for("bundled") is None
    _, skip = expectation_for(case, "bundled", "reverse")
    assert "only native kernels (warp)" in skip
    _, skip = expectation_for(case, "taichi", "reverse")
    assert skip is not None
    assert expectation_for(case, "warp", "reverse") == (case.expect, None)


def test_a_case_with_both_kernels_gives_each_engine_its_own(tmp_path):
    case, = _project(tmp_path, CASE.replace("    engines:", "    kernel: kernels/nk.py:lengths\n    engines:"))
    assert str(case.kernel_for("bundled")) == "kernels/nk.py:lengths"
    assert str(case.kernel_for("warp")) == "kernels/wk.py:lengths"
    assert str(case.kernel_for("taichi")) == "kernels/nk.py:lengths"


def test_the_loader_checks_native_kernels(tmp_path):
    with pytest.raises(CaseError, match="argument 1 is 'y' but the kernel's parameter 1 is 'out'"):
        _project(tmp_path, CASE.replace("      out: {", "      y: {"))
    with pytest.raises(CaseError, match="bundled engine's kernel is the case's own `kernel`"):
        _project(tmp_path, CASE.replace("warp: {kernel", "bundled: {kernel"))
    with pytest.raises(CaseError, match="no top-level function 'length'"):
        _project(tmp_path, CASE.replace("wk.py:lengths", "wk.py:length"))
    with pytest.raises(CaseError, match="missing required key 'kernel'"):
        _project(tmp_path, CASE.replace("      warp: {kernel: kernels/wk.py:lengths}",
                                        "      warp: {expect: pass}"))


def _execute(tmp_path, yaml: str, engine: str):
    from harness.cases import expand_runs
    from harness.execution.runner import Runner
    runner = Runner(tmp_path)
    if not runner.backend.can_launch:
        pytest.skip("launches need the sim or cuda backend")
    case, = _project(tmp_path, yaml)
    return {run.mode: runner.execute(run, isolate=False)
            for run in expand_runs(case, runner.backend.name, (engine,))}


def test_a_native_warp_kernel_passes_its_oracles_and_a_wrong_adjoint_fails_them(tmp_path):
    pytest.importorskip("warp")
    outcomes = _execute(tmp_path, CASE, "warp")
    assert {m: o.state for m, o in outcomes.items()} == {"primal": "PASS", "reverse": "PASS"}
    fd = next(v for v in outcomes["reverse"].oracles if v.name == "fd-reverse")
    assert fd.verdict == "pass"
    wrong = _execute(tmp_path, CASE.replace("wk.py:lengths", "wk.py:wrong_lengths"), "warp")
    assert wrong["reverse"].state == "FAIL"
    assert next(v for v in wrong["reverse"].oracles if v.name == "fd-reverse").verdict == "fail"


def _args(*arrays):
    from harness.core.activity import Duplicated
    return [Duplicated(a, da) for a, da in arrays]


def test_warp_vec3_elements_are_trailing_dimensions_and_the_gradient_is_exact():
    pytest.importorskip("warp")
    from harness.backends import get_backend
    from harness.engine.runtime.launch import LaunchConfig
    from harness.adapters import create
    from harness.cases.inputs import import_file
    backend = get_backend()
    if not backend.can_launch:
        pytest.skip("launches need the sim or cuda backend")
    import pathlib
    import tempfile
    folder = pathlib.Path(tempfile.mkdtemp())
    (folder / "wk_exact.py").write_text(WARP_KERNELS)
    kernel = import_file(folder / "wk_exact.py").lengths
    x = np.array([[3.0, 4.0, 0.0], [1.0, 2.0, 2.0]], np.float32)
    out, dout, dx = np.zeros(2, np.float32), np.array([1.0, 2.0], np.float32), np.zeros((2, 3), np.float32)
    engine = create("warp", backend)
    engine.launch(kernel, LaunchConfig.of(1, 2), *_args((x, dx), (out, dout)), mode="reverse")
    assert np.allclose(out, [5.0, 3.0])
    assert np.allclose(dx, [[0.6, 0.8, 0.0], [2 / 3, 4 / 3, 4 / 3]])
    with pytest.raises(CaseError, match=r"elements of shape \(3,\).*shape is \(2, 4\)"):
        engine.launch(kernel, LaunchConfig.of(1, 2), *_args((np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32)),
                                                            (out, dout)), mode="primal")


def test_taichi_native_kernels_on_ndarrays_and_fields(tmp_path):
    pytest.importorskip("taichi")
    yaml = CASE.replace("warp: {kernel: kernels/wk.py:lengths}", "taichi: {kernel: kernels/tk.py:lengths}")
    outcomes = _execute(tmp_path, yaml, "taichi")
    assert {m: o.state for m, o in outcomes.items()} == {"primal": "PASS", "reverse": "PASS"}
    scaled = yaml.replace("tk.py:lengths", "tk.py:scaled").replace("shape: [5, 3]", "shape: [5]") \
        .replace("modes: [primal, reverse]", "modes: [primal, forward, reverse]")
    outcomes = _execute(tmp_path, scaled, "taichi")
    assert outcomes["primal"].state == "PASS" and outcomes["reverse"].state == "PASS"
    assert outcomes["forward"].state == "UNSUPPORTED"
    assert "forward mode of a native Taichi kernel" in outcomes["forward"].message


def test_a_native_kernel_declares_its_precision():
    pytest.importorskip("warp")
    from harness.problems.precision import casts_to_float32
    import pathlib
    import tempfile
    from harness.cases.inputs import import_file
    folder = pathlib.Path(tempfile.mkdtemp())
    (folder / "wk_precision.py").write_text(WARP_KERNELS.replace("wp.vec3", "wp.vec3d").replace("float)", "wp.float64)")
                                            .replace("-> float", "-> wp.float64").replace("adj_out: float", "adj_out: wp.float64"))
    (folder / "wk_single.py").write_text(WARP_KERNELS)
    assert casts_to_float32(import_file(folder / "wk_single.py").lengths)
    assert not casts_to_float32(import_file(folder / "wk_precision.py").lengths)


def test_a_native_kernel_of_another_system_is_refused_by_name():
    pytest.importorskip("warp")
    pytest.importorskip("taichi")
    from harness.backends import get_backend
    from harness.engine.runtime.launch import LaunchConfig
    from harness.adapters import create
    import pathlib
    import tempfile
    from harness.cases.inputs import import_file
    backend = get_backend()
    if not backend.can_launch:
        pytest.skip("launches need the sim or cuda backend")
    folder = pathlib.Path(tempfile.mkdtemp())
    (folder / "wk_other.py").write_text(WARP_KERNELS)
    kernel = import_file(folder / "wk_other.py").lengths
    x, out = np.ones((2, 3), np.float32), np.zeros(2, np.float32)
    with pytest.raises(UnsupportedError, match="a native warp kernel runs on the warp adapter, not taichi"):
        create("taichi", backend).launch(kernel, LaunchConfig.of(1, 2), *_args((x, x * 0), (out, out * 0)),
                                         mode="primal")
