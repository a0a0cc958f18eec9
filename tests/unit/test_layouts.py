"""Layouts (strided, transposed, broadcast, offset views) and aliasing: harness/problems/layouts.py, the
`alias:` key of the case format, KernelProblem's device copies and the runner on the layout cases."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.core.activity import Const, Duplicated
from harness.core.errors import ActivityError, CaseError
from harness.cases.inputs import build_args, with_layout
from harness.problems.layouts import (
    Buffer, byte_span, check_aliasing, check_launch, check_layout, device_view, may_overlap, root_of, self_overlap,
)
from harness.model import ArraySpec

ROOT = Path(__file__).resolve().parents[2]


def _ptr(a) -> int:
    return a.__array_interface__["data"][0]


class HostBackend:
    """The sim backend's array behaviour (numpy in, numpy out) without numba."""
    name = "host"

    def asarray(self, host):
        return np.array(host, copy=True)

    def is_array(self, value):
        return isinstance(value, np.ndarray)


# ----------------------------------------------------------------------------- views from the case format

def test_with_layout_builds_each_kind_of_view():
    rng = np.random.default_rng(0)
    strided = with_layout(ArraySpec((5,), "float64", "arange", {"strides": (3,)}), rng)
    assert strided.strides == (24,) and strided.shape == (5,)
    assert np.array_equal(strided, [0, 3, 6, 9, 12])
    backwards = with_layout(ArraySpec((4,), "float64", "arange", {"strides": (-2,)}), rng)
    assert np.array_equal(backwards, [6, 4, 2, 0])           # inside its allocation, walking back
    lo, hi = byte_span(backwards)
    root = root_of(backwards)
    assert _ptr(root) <= lo and hi <= _ptr(root) + root.nbytes
    transposed = with_layout(ArraySpec((2, 3), "float32", "arange", {"transpose": (1, 0)}), rng)
    assert transposed.flags.f_contiguous and not transposed.flags.c_contiguous
    broadcast = with_layout(ArraySpec((4, 3), "float64", "arange", {"broadcast": (1, 3)}), rng)
    assert broadcast.strides == (0, 8)
    offset = with_layout(ArraySpec((4,), "float32", "arange", {"offset": 3}), rng)
    assert offset.flags.c_contiguous and _ptr(offset) - _ptr(root_of(offset)) == 12


def test_self_overlap_names_the_reason():
    assert self_overlap(np.zeros((3, 4))) is None
    assert self_overlap(np.zeros(8)[::-2]) is None
    assert self_overlap(np.zeros((4, 3)).T) is None
    assert "broadcast (stride 0 on axis 0)" in self_overlap(np.broadcast_to(np.arange(3.0), (4, 3)))
    windows = np.lib.stride_tricks.as_strided(np.arange(10.0), (4, 3), (8, 8))   # sliding windows
    assert "overlapping strides" in self_overlap(windows)


# ----------------------------------------------------------------------------- device copies

def test_device_view_keeps_strides_offsets_and_sharing():
    be = HostBackend()
    base = np.arange(20.0)
    strided, offset, transposed = base[1::3], base[5:9], np.arange(12.0).reshape(3, 4).T
    roots: dict = {}
    d_strided = device_view(be, strided, roots)
    d_offset = device_view(be, offset, roots)
    d_transposed = device_view(be, transposed, roots)
    assert d_strided.strides == strided.strides and np.array_equal(d_strided, strided)
    assert np.array_equal(d_offset, offset)
    assert _ptr(d_offset) - _ptr(root_of(d_offset)) == 5 * 8          # the offset survives the copy
    assert d_transposed.strides == transposed.strides and np.array_equal(d_transposed, transposed)
    # views of one host allocation are views of one device allocation, and never the host's memory
    assert np.shares_memory(d_strided, d_offset)
    assert not np.shares_memory(d_strided, base)
    # the float64 reference of FD keeps the layout, strides rescaled to the new item size
    f32 = np.arange(12, dtype=np.float32)[::2]
    d64 = device_view(be, f32, {}, np.float64)
    assert d64.dtype == np.float64 and d64.strides == (16,) and np.array_equal(d64, f32)


def test_device_view_of_a_plain_array_is_a_plain_copy():
    be = HostBackend()
    x = np.arange(6.0).reshape(2, 3)
    d = device_view(be, x)
    assert d.flags.c_contiguous and np.array_equal(d, x) and not np.shares_memory(d, x)
    roots: dict = {}
    assert np.shares_memory(device_view(be, x, roots), device_view(be, x, roots))   # passed twice


def test_filled_like_gives_shadows_the_primals_layout():
    from harness.problems.layouts import filled_like
    base = np.arange(30.0)
    for view in (base[2::3], base[7:17], np.arange(12.0).reshape(3, 4).T):
        shadow = filled_like(view, np.ones(view.shape))
        assert shadow.strides == view.strides and np.all(shadow == 1)
        assert _ptr(shadow) - _ptr(root_of(shadow)) == _ptr(view) - _ptr(root_of(view))
        assert not np.shares_memory(shadow, view)


# ----------------------------------------------------------------------------- the checks

def test_broadcast_is_refused_only_when_differentiable():
    b = np.broadcast_to(np.arange(3.0), (4, 3))
    check_layout(2, "c", b, "const")
    with pytest.raises(ActivityError, match=r"argument 2 \('c'\) is a broadcast \(stride 0 on axis 0\) view "
                                            r"marked duplicated") as info:
        check_layout(2, "c", b, "duplicated")
    assert info.value.argument == 2 and info.value.param == "c"


def test_aliasing_rules():
    x = np.zeros(8)
    y = np.zeros(8)
    check_aliasing([Buffer(0, "x", "primal", x, False), Buffer(1, "y", "primal", x, False)])    # const-const
    check_aliasing([Buffer(0, "x", "primal", x, True), Buffer(1, "y", "primal", y, True)])      # disjoint
    with pytest.raises(ActivityError, match=r"argument 0 \('x'\) and argument 1 \('y'\) share memory") as info:
        check_aliasing([Buffer(0, "x", "primal", x, True), Buffer(1, "y", "primal", x[2:6], False)])
    assert (info.value.argument, info.value.param) == (1, "y")
    with pytest.raises(ActivityError, match=r"argument 0 \('x'\) is passed as its own shadow"):
        check_aliasing([Buffer(0, "x", "primal", x, True), Buffer(0, "x", "shadow", x, True)])
    with pytest.raises(ActivityError, match=r"the shadow of argument 0 \('x'\) and the shadow of argument 1"):
        check_aliasing([Buffer(0, "x", "shadow", y, True), Buffer(1, "z", "shadow", y[::2], True)])
    # interleaved but disjoint views do not overlap; overlapping ranges of device-like arrays do
    assert not may_overlap(x[::2], x[1::2])
    assert may_overlap(x[:5], x[4:])


def test_check_launch_for_python_api_users(kernels):
    x, dx, y = np.zeros(4), np.zeros(4), np.zeros(4)
    check_launch(kernels.exp_map, Duplicated(y, dx), Const(x))
    with pytest.raises(ActivityError, match=r"argument 1 \('x'\) is passed as its own shadow"):
        check_launch(kernels.exp_map, Duplicated(y, dx), Duplicated(x, x))
    with pytest.raises(ActivityError, match=r"argument 0 \('out'\) and argument 1 \('x'\) share memory"):
        check_launch(kernels.exp_map, Duplicated(x, dx), Const(x))
    with pytest.raises(ActivityError, match="broadcast"):
        check_launch(kernels.exp_map, Duplicated(np.broadcast_to(x[:1], (4,)), dx), Const(y))


# ----------------------------------------------------------------------------- the case format

def _case(tmp_path: Path, args: str) -> Path:
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "kernels" / "k.py").write_text("def k(out, x, y):\n    pass\n")
    path = tmp_path / "c.yaml"
    path.write_text("id: c\nkernel: kernels/k.py:k\nlaunch: {threads: 4}\nargs:\n" + args)
    return path


OUT = "  out: {array: {shape: [4], dtype: float64}, activity: duplicated}\n"
X = "  x: {array: {shape: [4], dtype: float32, init: normal, layout: {strides: [2]}}, activity: const}\n"


def test_alias_takes_its_targets_array_and_buffer(tmp_path):
    from harness.cases import load_case_file
    case = load_case_file(_case(tmp_path, OUT + X + "  y: {alias: x}\n"), tmp_path)[0]
    x, y = case.args[1], case.args[2]
    assert (y.kind, y.alias, y.activity, y.array) == ("array", "x", "const", x.array)
    values = build_args(case.args, 0, tmp_path)
    assert values[2].value is values[1].value


@pytest.mark.parametrize("y, match", [
    ("{alias: z}", "alias 'z' is not an argument of the case"),
    ("{alias: y}", "an argument cannot alias itself"),
    ("{alias: x, width: 2}", "an alias argument takes only 'alias' and 'activity'"),
    ("{alias: x, activity: active}", "activity 'active' does not apply"),
    ("{array: {shape: [4], dtype: float64}, activity: duplicated, shadow: {alias: q}}", "alias 'q' is not an argument"),
    ("{array: {shape: [4], dtype: float64}, alias: x}", "exactly one of array, scalar, type, function, rng_states, alias"),
])
def test_alias_mistakes_are_case_errors(tmp_path, y, match):
    from harness.cases import load_case_file
    with pytest.raises(CaseError, match=match):
        load_case_file(_case(tmp_path, OUT + X + f"  y: {y}\n"), tmp_path)


def test_alias_of_an_alias_is_refused(tmp_path):
    from harness.cases import load_case_file
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text("def k(out, x, y, z):\n    pass\n")
    path = tmp_path / "c.yaml"
    path.write_text("id: c\nkernel: kernels/k.py:k\nlaunch: {threads: 4}\nargs:\n" + OUT + X +
                    "  y: {alias: x}\n  z: {alias: y}\n")
    with pytest.raises(CaseError, match="alias 'y' is itself an alias"):
        load_case_file(path, tmp_path)


# ----------------------------------------------------------------------------- end to end

def _outcomes(case_file: str, backend_name: str):
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    runner = Runner(ROOT, backend_name)
    return {f"{c.variant or 'base'}::{r.name}": runner.execute(r)
            for c in load_case_file(ROOT / case_file, ROOT) for r in expand_runs(c, backend_name)}


@pytest.mark.parametrize("case_file", ["cases/layout-strided.yaml", "cases/layout-transposed.yaml",
                                       "cases/layout-offset.yaml", "cases/layout-broadcast.yaml",
                                       "cases/alias-buffer-twice.yaml", "cases/alias-own-shadow.yaml"])
def test_layout_and_alias_cases(launching_backend, case_file):
    outcomes = _outcomes(case_file, launching_backend.name)
    bad = {k: f"{o.state}: {o.message}" for k, o in outcomes.items() if o.state != "PASS"}
    assert not bad, bad


def test_shadows_and_cotangents_reach_the_kernel_in_the_primals_layout(launching_backend, monkeypatch):
    """Every array a derivative launch passes for a strided argument (primal and shadow) has its strides."""
    from harness.cases import expand_runs, load_case_file
    from harness.engine.runtime.launch import Engine
    from harness.execution.runner import Runner
    seen = []
    real = Engine.launch

    def spy(self, kernel, config, *args, mode="primal"):
        if mode != "primal":
            for a in args:
                if isinstance(a, Duplicated):
                    seen.append((mode, a.value.strides, a.shadow.strides))
        return real(self, kernel, config, *args, mode=mode)

    monkeypatch.setattr(Engine, "launch", spy)
    case = load_case_file(ROOT / "cases/layout-strided.yaml", ROOT)[0]
    runner = Runner(ROOT, launching_backend.name)
    for run in expand_runs(case, launching_backend.name):
        if run.mode != "primal" and run.dtype == "float64":
            assert runner.execute(run).state == "PASS"
    assert {m for m, _, _ in seen} == {"forward", "reverse"}
    assert all(p == s for _, p, s in seen), seen
    assert {p for _, p, _ in seen} == {(24,), (16,), (40,)}        # strides 3, 2 and 5 in float64
