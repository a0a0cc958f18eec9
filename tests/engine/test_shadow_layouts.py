"""Each shadow is compiled with its own layout.

On a GPU, a derivative kernel typed for a C-ordered shadow indexes a Fortran-ordered or strided one
as if it were C-ordered: silently wrong tangents and gradients (measured on the H200 with
kernels/layouts.py:mul2d). The simulator ignores the compiled types and hides it, so these tests
inspect the types the engine compiles for (Plan.signature) on whichever backend runs them, and
check the values where the backend launches. cases/layout-shadow-order.yaml runs the same on a GPU.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.core.activity import BatchDuplicated, Const, Duplicated
from harness.engine.runtime.launch import Engine, LaunchConfig, derivative_arg_types
from harness.engine.runtime.signature import classify
from harness.cases.inputs import laid_out, load_kernel

ROOT = Path(__file__).resolve().parents[2]
SHAPE = (16, 12)
CONFIG = LaunchConfig.threads(SHAPE, (8, 8))


@pytest.fixture(scope="module")
def mul2d(backend):
    return load_kernel("kernels/layouts.py:mul2d", ROOT)


def _arrays(be, order_primal="C", order_shadow="F"):
    rng = np.random.default_rng(5)
    prim = [np.asarray(rng.standard_normal(SHAPE), order=order_primal) for _ in range(3)]
    shad = [np.asarray(rng.standard_normal(SHAPE), order=order_shadow) for _ in range(3)]
    return [be.asarray(p) for p in prim], [be.asarray(s) for s in shad], prim, shad


def _layouts(sig) -> list[str]:
    return [t.layout for t in sig]


def test_classify_records_each_shadows_layout(backend):
    _, _, prim, shad = _arrays(backend)
    c, f = backend.asarray(prim[0]), backend.asarray(shad[0])
    strided = backend.asarray(laid_out(np.zeros(SHAPE), {"strides": [30, 2]}))
    infos = classify(backend, ["a", "b", "k"], (Duplicated(c, f), Duplicated(c, strided), Const(c)), "reverse")
    assert [i.layout for i in infos] == ["C", "C", "C"]
    assert [i.shadow_layouts for i in infos] == [("A",), ("A",), ()]
    # a shadow's layout is part of the plan key: a C-shadowed plan is never reused for an F shadow
    same = classify(backend, ["a", "b", "k"], (Duplicated(c, c.copy()), Duplicated(c, strided), Const(c)), "reverse")
    assert infos[0].type_key() != same[0].type_key()


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_derivative_kernel_types_each_shadow_with_its_own_layout(backend, mode):
    _, _, prim, shad = _arrays(backend)
    c, f = backend.asarray(prim[0]), backend.asarray(shad[0])
    infos = classify(backend, ["out", "x"], (Duplicated(c, f), Duplicated(f, c)), mode)
    # out: C primal, Fortran shadow; x: Fortran primal ('A'), C-ordered shadow
    assert _layouts(derivative_arg_types(infos, mode, 1)) == ["C", "A", "A", "C"]
    batch = classify(backend, ["out"], (BatchDuplicated(c, (f, c.copy())),), mode)
    assert _layouts(derivative_arg_types(batch, mode, 2)) == ["C", "A", "C"]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_compiled_signature_of_mul2d_with_fortran_shadows(backend, mul2d, mode):
    engine = Engine(backend)
    dprim, dshad, _, _ = _arrays(backend)
    args = [Duplicated(p, s) for p, s in zip(dprim, dshad)]
    plan, _ = engine.prepare(mul2d, CONFIG, args, mode)
    assert _layouts(plan.signature[:6]) == ["C", "A"] * 3
    # the same kernel with C-ordered shadows is another plan, typed C throughout
    c_plan, _ = engine.prepare(mul2d, CONFIG, [Duplicated(p, backend.asarray(np.zeros(SHAPE))) for p in dprim], mode)
    assert c_plan is not plan and _layouts(c_plan.signature[:6]) == ["C"] * 6


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_mul2d_values_with_fortran_shadows(launching_backend, mul2d, mode):
    """out = x c + x^2: forward d_out = (c + 2x) dx + x dc; reverse dx += (c + 2x) w, dc += x w."""
    be = launching_backend
    engine = Engine(be)
    dprim, dshad, prim, shad = _arrays(be)
    _, x, cc = prim
    engine.launch(mul2d, CONFIG, *[Duplicated(p, s) for p, s in zip(dprim, dshad)], mode=mode)
    got = [be.to_host(s) for s in dshad]
    if mode == "forward":
        np.testing.assert_allclose(got[0], (cc + 2 * x) * shad[1] + x * shad[2], rtol=1e-12)
    else:
        w = shad[0]
        np.testing.assert_allclose(got[1], shad[1] + (cc + 2 * x) * w, rtol=1e-12)
        np.testing.assert_allclose(got[2], shad[2] + x * w, rtol=1e-12)
        np.testing.assert_allclose(got[0], 0.0)


# ----------------------------------------------------------------------------- the case format

_CASE = """\
id: c
title: t
kernel: kernels/layouts.py:mul_sin
launch: {{threads: 8}}
args:
  out: {{array: {{shape: [8], dtype: float64}}, activity: duplicated, shadow: {shadow}}}
  x: {{array: {{shape: [8], dtype: float64}}, activity: duplicated}}
  y: {{array: {{shape: [8], dtype: float64}}}}
"""


def _load(tmp_path, shadow):
    from harness.cases import load_case_file
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "kernels" / "layouts.py").write_text((ROOT / "kernels" / "layouts.py").read_text())
    path = tmp_path / "c.yaml"
    path.write_text(_CASE.format(shadow=shadow))
    return load_case_file(path, tmp_path)[0]


def test_case_format_shadow_layout(tmp_path):
    from harness.core.errors import CaseError
    out = _load(tmp_path, "{layout: {strides: [3]}, init: ones}").args[0]
    assert out.shadow == {"init": "ones", "layout": {"strides": (3,)}}
    with pytest.raises(CaseError, match="a shadow cannot be a broadcast view"):
        _load(tmp_path, "{layout: {broadcast: [1]}}")
    with pytest.raises(CaseError, match="takes no init or layout"):
        _load(tmp_path, "{alias: x, layout: {offset: 1}}")
    with pytest.raises(CaseError, match="strides need one entry per dimension"):
        _load(tmp_path, "{layout: {strides: [3, 1]}}")


def test_laid_out_keeps_values_and_takes_the_layout():
    values = np.arange(12.0).reshape(3, 4)
    f = laid_out(values, {"transpose": [1, 0]})
    assert f.flags.f_contiguous and not f.flags.c_contiguous and np.array_equal(f, values)
    s = laid_out(values, {"strides": [9, 2]})
    assert s.strides == (72, 16) and np.array_equal(s, values)
