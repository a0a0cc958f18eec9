"""The broadcast/map front end (harness/broadcast): index maps against numpy, generated kernels run
on the backend against numpy results, split vs packed arguments, MixedActivityError, constant
folding vs the historical `fold_constants: false`, derivatives through the engine, and the case
loader's broadcast/map argument rule.

numba is imported only inside fixtures and tests, after the harness plugin chose the backend.
"""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core.activity import Active, Const, Duplicated
from harness.core.errors import ActivityError, CaseError, KernelError, MixedActivityError
from harness.broadcast.frontend import extrusion, foldable, operand_index

ROOT = Path(__file__).resolve().parents[2]
SLOW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# No per-example deadline: it is a timing assertion, and a loaded 2-core CI machine misses it.
UNTIMED = settings(deadline=None)


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def be():
    from harness.backends import get_backend
    backend = get_backend()
    if not backend.can_launch:
        pytest.skip(f"the '{backend.name}' backend compiles only")
    return backend


@pytest.fixture(scope="module")
def k(be):
    """kernels/broadcast.py, loaded as the case runner loads it."""
    from harness.cases.inputs import load_kernel

    class Kernels:
        def __getattr__(self, name):
            return load_kernel(f"kernels/broadcast.py:{name}", ROOT)
    return Kernels()


def engine_with(be, **options):
    from harness.engine.runtime.launch import Engine, EngineOptions
    return Engine(be, EngineOptions(**options))


@pytest.fixture(scope="module")
def split(be):
    return engine_with(be)


@pytest.fixture(scope="module")
def packed(be):
    return engine_with(be, launch="packed")


@pytest.fixture(scope="module")
def unfolded(be):
    return engine_with(be, fold_constants=False)


def host(be, a):
    return np.asarray(be.to_host(a))


# ----------------------------------------------------------------------------- index maps (no kernels)

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@UNTIMED
@given(dest=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), shape=shapes)
def test_extrusion_accepts_exactly_what_numpy_broadcasts_into_the_destination(dest, shape):
    try:
        fits = np.broadcast_shapes(dest, shape) == dest
    except ValueError:
        fits = False
    fits = fits and len(shape) <= len(dest)
    extruded = extrusion(dest, shape)
    assert (extruded is not None) == fits
    if extruded is not None:
        assert extruded == tuple(n == 1 for n in shape)


@UNTIMED
@given(dest=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), data=st.data())
def test_operand_index_is_numpys_broadcast(dest, data):
    # an operand shape that broadcasts into dest: drop some leading dims, set some dims to 1
    lead = data.draw(st.integers(0, len(dest)))
    shape = tuple(n if data.draw(st.booleans()) else 1 for n in dest[lead:])
    operand = np.arange(int(np.prod(shape))).reshape(shape)
    expected = np.broadcast_to(operand, dest)
    extruded = extrusion(dest, shape)
    for index in itertools.product(*(range(n) for n in dest)):
        assert operand[operand_index(index, extruded)] == expected[index]


def test_map_needs_the_destinations_shape():
    assert extrusion((3, 4), (3, 4), "map") == (False, False)
    assert extrusion((3, 1), (3, 1), "map") == (False, True)
    assert extrusion((3, 4), (4,), "map") is None
    assert extrusion((3, 4), (1, 4), "map") is None


def test_foldable():
    import math
    from harness.broadcast.kernelgen import python_function_or_none
    assert foldable(np.float64) and foldable(math.sin) and foldable(np.sin) and foldable(lambda a: a)
    assert not foldable(1.0) and not foldable(np.zeros(2)) and not foldable((1.0,)) and not foldable([1])
    assert python_function_or_none(len) is None


# ----------------------------------------------------------------------------- primal launches vs numpy

@SLOW
@given(dest=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), data=st.data())
def test_generated_broadcast_matches_numpy(be, k, split, dest, data):
    from harness.broadcast import broadcast_into
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))

    def operand_shape():
        lead = data.draw(st.integers(0, len(dest)))
        return tuple(n if data.draw(st.booleans()) else 1 for n in dest[lead:])

    x = rng.standard_normal(operand_shape())
    y = rng.standard_normal(operand_shape())
    a = float(rng.standard_normal())
    out = be.zeros(dest, np.float64)
    broadcast_into(k.axpy, out, a, x, y, engine=split, block=8)
    np.testing.assert_allclose(host(be, out), np.broadcast_to(a * x + y, dest), rtol=1e-14)


def test_broadcast_allocates_the_numpy_result(be, k, split):
    from harness.broadcast import broadcast
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.arange(3, dtype=np.float32)
    out = broadcast(k.add, x, y, engine=split)
    assert out.shape == (2, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(host(be, out), x + y)
    # a numpy type as f sizes the result in its own dtype: broadcast(numpy.float64, x)
    wide = broadcast(np.float64, x, engine=split)
    assert wide.dtype == np.float64
    np.testing.assert_array_equal(host(be, wide), x)


def test_map_runs_and_refuses_broadcasting(be, k, split):
    from harness.broadcast import map_
    x, y = np.arange(4.0), np.ones(4)
    out = be.zeros(4, np.float64)
    map_(k.add, out, x, y, engine=split)
    np.testing.assert_array_equal(host(be, out), x + y)
    with pytest.raises(KernelError, match=r"argument 2 \('y'\) of shape \(1,\) does not fit the destination "
                                          r"'dest' of shape \(4,\) \(a map needs every operand") as info:
        map_(k.add, out, x, np.ones(1), engine=split)
    assert (info.value.argument, info.value.param) == (2, "y")


def test_shape_and_destination_errors(be, k, split):
    from harness.broadcast import broadcast_into
    with pytest.raises(KernelError, match=r"argument 1 \('x'\) of shape \(3,\) does not fit the destination "
                                          r"'dest' of shape \(2, 4\) \(numpy broadcasting\)"):
        broadcast_into(k.add, be.zeros((2, 4), np.float64), np.ones(3), 1.0, engine=split)
    with pytest.raises(KernelError, match=r"argument 0 \('dest'\): the destination of a broadcast must be an array") as info:
        broadcast_into(k.add, 1.0, np.ones(3), 1.0, engine=split)
    assert info.value.argument == 0


def test_names_come_from_f_or_are_given(be, k, split):
    from harness.broadcast import launcher_for
    kernel, path = launcher_for(split).generated(k.add, np.zeros(3), np.ones(3), 2.0)
    assert "def add__broadcast_split(dest, x, y):" in Path(path).read_text()
    kernel, path = launcher_for(split, names=["out", "u", "v"]).generated(k.add, np.zeros(3), np.ones(3), 2.0)
    assert "def add__broadcast_split(out, u, v):" in Path(path).read_text()
    kernel, path = launcher_for(split).generated(np.float64, np.zeros(3), np.ones(3))
    assert "def float64__broadcast_split(dest, a0):" in Path(path).read_text()


def test_generated_source_is_readable_and_content_hashed(be, k, split):
    from harness.broadcast import launcher_for
    launcher = launcher_for(split)
    _, path = launcher.generated(k.add, np.zeros((2, 3, 4)), np.ones((3, 1)), np.ones(4))
    text = Path(path).read_text()
    assert "add = cuda.jit(device=True, inline=\"always\")(resolve('file:" in text
    assert "dest[i0, i1, i2] = add(x[i1, 0], y[i2])" in text
    assert re.search(r"add__broadcast_split_[0-9a-f]{16}\.py$", path)
    # the same broadcast pattern with other sizes and dtypes is the same kernel
    _, again = launcher.generated(k.add, np.zeros((5, 3, 2), np.float32), np.ones((3, 1)), np.ones(2))
    assert again == path


# ----------------------------------------------------------------------------- packed vs split

def test_packed_primal_is_one_tuple_argument(be, k, split, packed):
    from harness.broadcast import broadcast_into, launcher_for
    x = np.arange(8.0).reshape(2, 4)
    y = np.arange(4.0)
    out_split, out_packed = be.zeros((2, 4), np.float64), be.zeros((2, 4), np.float64)
    broadcast_into(k.add, out_split, x, y, engine=split)
    result = broadcast_into(k.add, out_packed, x, y, engine=packed)
    np.testing.assert_array_equal(host(be, out_packed), host(be, out_split))
    text = Path(result.plan.source_path).read_text()
    assert "def add__broadcast_packed(dest, bc):" in text and "add(bc[0][i0, i1], bc[1][i1])" in text
    assert [j.function for j in result.jobs] == ["add__broadcast_packed"]
    plan, infos = launcher_for(packed).prepare(k.add, None, (out_packed, x, y), "primal")
    assert infos[1].kind == "tuple" and [m.name for m in infos[1].members] == ["bc[0]", "bc[1]"]


def test_packed_mixed_activities_name_the_members(be, k, packed):
    from harness.broadcast import broadcast_into
    out, x, y = be.zeros(4, np.float64), np.ones(4), np.ones(4)
    for mode in ("forward", "reverse"):
        with pytest.raises(MixedActivityError) as info:
            broadcast_into(k.add, Duplicated(out, np.zeros(4)), Const(x), Duplicated(y, np.zeros(4)),
                           engine=packed, mode=mode)
        assert str(info.value) == ("packed argument 1 ('bc') mixes activities: x is const, y is duplicated; "
                                   "split the arguments (launch: split) or give them one activity")
        assert (info.value.argument, info.value.param) == (1, "bc")
    # a scalar member counts too; the destination is not a member
    with pytest.raises(MixedActivityError, match="a is active, x is duplicated, y is duplicated"):
        broadcast_into(k.axpy, Duplicated(out, np.zeros(4)), Active(2.0), Duplicated(x, np.zeros(4)),
                       Duplicated(y, np.zeros(4)), engine=packed, mode="reverse")
    # a primal launch has no activities to mix
    broadcast_into(k.add, Duplicated(out, np.zeros(4)), Const(x), Duplicated(y, np.zeros(4)), engine=packed)


def test_packed_with_one_activity_differentiates_like_split(be, k, split, packed):
    from harness.broadcast import broadcast_into
    rng = np.random.default_rng(1)
    x, y, w = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((3, 4))
    grads = []
    for engine in (split, packed):
        out, dout = be.zeros((3, 4), np.float64), be.asarray(w.copy())
        dx, dy = be.zeros((3, 4), np.float64), be.zeros(4, np.float64)
        broadcast_into(k.mul, Duplicated(out, dout), Duplicated(be.asarray(x), dx), Duplicated(be.asarray(y), dy),
                       engine=engine, mode="reverse")
        grads.append((host(be, dx), host(be, dy)))
    np.testing.assert_allclose(grads[0][0], w * y, rtol=1e-14)
    np.testing.assert_allclose(grads[0][1], (w * x).sum(axis=0), rtol=1e-13)   # y is read by 3 rows
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-14)


# ----------------------------------------------------------------------------- derivatives (split)

def test_gpuarrays_535_const_x_duplicated_y(be, k, split):
    """x .+ y with x Const, y Duplicated: reverse dy += dout, forward dout = dy."""
    from harness.broadcast import broadcast_into
    rng = np.random.default_rng(2)
    x, y, w, v = (rng.standard_normal(16) for _ in range(4))
    out, dout, dy = be.zeros(16, np.float64), be.asarray(w.copy()), be.zeros(16, np.float64)
    broadcast_into(k.add, Duplicated(out, dout), Const(be.asarray(x)), Duplicated(be.asarray(y), dy),
                   engine=split, mode="reverse")
    np.testing.assert_allclose(host(be, dy), w, rtol=1e-14)
    np.testing.assert_array_equal(host(be, dout), 0)          # the overwritten output's cotangent is consumed
    np.testing.assert_allclose(host(be, out), x + y, rtol=1e-14)
    out, dout = be.zeros(16, np.float64), be.zeros(16, np.float64)
    broadcast_into(k.add, Duplicated(out, dout), Const(be.asarray(x)), Duplicated(be.asarray(y), be.asarray(v)),
                   engine=split, mode="forward")
    np.testing.assert_allclose(host(be, dout), v, rtol=1e-14)


def test_active_scalar_operand_is_reduced_over_threads(be, k, split):
    from harness.broadcast import broadcast_into
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    out, dout = be.zeros((4, 5), np.float64), be.asarray(w.copy())
    result = broadcast_into(k.mul, Duplicated(out, dout), Active(2.5), Const(be.asarray(x)),
                            engine=split, mode="reverse")
    assert result.adjoints["a"] == pytest.approx(float((w * x).sum()), rel=1e-12)


# ----------------------------------------------------------------------------- constant folding

def test_type_operand_is_folded_by_specializing_f(be, k, split):
    from harness.broadcast import broadcast_into
    x = np.linspace(-1, 1, 6).astype(np.float32)
    out = be.zeros(6, np.float64)
    result = broadcast_into(k.convert_to, out, np.float64, x, engine=split)
    np.testing.assert_array_equal(host(be, out), x.astype(np.float64))
    text = Path(_source_of(k.convert_to, split, out, np.float64, x)).read_text()
    assert "T = resolve('import:numpy:float64')" in text
    assert "def convert_to__T(a):" in text and "return T(a)" in text
    assert "def convert_to__broadcast_split(dest, a):" in text        # T is no kernel parameter
    assert "dest[i] = convert_to__T(a[i])" in text
    assert result.plan is not None


def test_closure_operand_is_folded_with_its_captured_type(be, k, split):
    from harness.broadcast import broadcast_into
    x = np.arange(5, dtype=np.float32)
    out = be.zeros(5, np.float32)
    broadcast_into(k.apply, out, k.float32_twice, x, engine=split)
    np.testing.assert_array_equal(host(be, out), 2 * x)
    text = Path(_source_of(k.apply, split, out, k.float32_twice, x)).read_text()
    assert "capture = resolve('import:numpy:float32')" in text
    assert "def closure__capture(arg):" in text and "return capture(arg) * 2" in text
    assert "def apply__g(a):" in text and "return closure__capture(a)" in text


def test_folded_closure_differentiates(be, k, split):
    from harness.broadcast import broadcast_into
    rng = np.random.default_rng(5)
    a, b, w = rng.standard_normal((2, 3)), rng.standard_normal(3), rng.standard_normal((2, 3))
    out, dout = be.zeros((2, 3), np.float64), be.asarray(w.copy())
    da, db = be.zeros((2, 3), np.float64), be.zeros(3, np.float64)
    broadcast_into(k.apply_add, Duplicated(out, dout), k.float32_twice, Duplicated(be.asarray(a), da),
                   Duplicated(be.asarray(b), db), engine=split, mode="reverse")
    np.testing.assert_allclose(host(be, da), 2 * w, rtol=1e-6)
    np.testing.assert_allclose(host(be, db), w.sum(axis=0), rtol=1e-12)


def test_a_runtime_closure_and_a_plain_function_operand(be, k, split):
    from harness.broadcast import broadcast_into

    def make(scale):
        def closure(arg):
            return arg * scale
        return closure
    x = np.arange(4.0)
    out = be.zeros(4, np.float64)
    broadcast_into(k.apply, out, make(3.0), x, engine=split)
    np.testing.assert_array_equal(host(be, out), 3 * x)
    broadcast_into(k.apply_add, out, k.float32_twice, x, 1.0, engine=split)
    np.testing.assert_array_equal(host(be, out), 2 * x + 1)


def test_no_folding_reproduces_the_reverted_pr(be, k, unfolded):
    from harness.broadcast import broadcast_into
    x = np.ones(4, np.float32)
    with pytest.raises(KernelError) as info:
        broadcast_into(k.convert_to, be.zeros(4, np.float64), np.float64, x, engine=unfolded)
    assert (info.value.argument, info.value.param) == (1, "T")
    assert str(info.value).startswith("passing non-bitstype argument: argument 1 ('T') is of type type "
                                      "(numpy.float64), which is not isbits")
    with pytest.raises(KernelError) as info:
        broadcast_into(k.apply, be.zeros(4, np.float32), k.float32_twice, x, engine=unfolded, mode="reverse")
    assert (info.value.argument, info.value.param) == (1, "g")
    assert "nested: .capture is of type type (numpy.float32)" in str(info.value)


def test_no_folding_packed_names_the_member(be, k):
    from harness.broadcast import broadcast_into
    engine = engine_with(be, launch="packed", fold_constants=False)
    x = np.ones(4, np.float32)
    for mode in ("primal", "reverse"):
        with pytest.raises(KernelError) as info:
            broadcast_into(k.apply, Duplicated(be.zeros(4, np.float32), np.zeros(4, np.float32)), k.float32_twice,
                           Duplicated(x, np.zeros(4, np.float32)), engine=engine, mode=mode)
        assert (info.value.argument, info.value.param) == (1, "bc")
        assert re.search(r"argument 1 \('bc'\) is of type tuple, which is not isbits: it holds 1 non-isbits member; "
                         r"nested: \[0\] is of type function \(capture_type.<locals>.closure\).*"
                         r"\[0\]\.capture is of type type \(numpy.float32\)", str(info.value))


def test_a_folded_constant_is_always_const(be, k, split):
    from harness.broadcast import broadcast_into
    with pytest.raises(ActivityError, match=r"argument 1 \('T'\) is type \(numpy.float64\), a compile-time "
                                            r"constant: it is always const \(got duplicated\)"):
        broadcast_into(k.convert_to, be.zeros(2, np.float64), Duplicated(np.float64, None), np.ones(2),
                       engine=split, mode="forward")


def _source_of(f, engine, *args):
    from harness.broadcast import launcher_for
    return launcher_for(engine).generated(f, *args)[1]


# ----------------------------------------------------------------------------- references

def test_references_are_stable_text_where_possible(k):
    from harness.broadcast.kernelgen import reference, resolve
    assert reference(np.float64) == "import:numpy:float64"
    assert reference(np.sin) == "import:numpy:sin"
    ref = reference(k.add)
    assert ref == f"file:{ROOT / 'kernels' / 'broadcast.py'}:add"
    assert reference(k.float32_twice).endswith("broadcast.py:float32_twice")   # a closure bound at top level
    local = (lambda: (lambda a: a))()
    label = reference(local)
    assert label.startswith("object:") and reference(local) == label and resolve(label) is local
    assert resolve(ref) is k.add
    with pytest.raises(LookupError, match="created at run time in another process"):
        resolve("object:gone#0")


# ----------------------------------------------------------------------------- the case loader

CASE = """\
id: bc
kernel: kernels/f.py:add
launch: {launch}
args:
  out: {dest}
  x: {{array: {{shape: [4], dtype: float32}}}}
  {second}: {{scalar: {{value: 1.0}}}}
"""


def _load(tmp_path, launch="{style: broadcast}", dest="{array: {shape: [4], dtype: float32}}", second="y"):
    from harness.cases import load_case_file
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "cases").mkdir(exist_ok=True)
    (tmp_path / "kernels" / "f.py").write_text("def add(x, y):\n    return x + y\n")
    path = tmp_path / "cases" / "bc.yaml"
    path.write_text(CASE.format(launch=launch, dest=dest, second=second))
    return load_case_file(path, tmp_path)


def test_loader_takes_the_destination_then_fs_operands(tmp_path):
    [case] = _load(tmp_path)
    assert [a.name for a in case.args] == ["out", "x", "y"] and case.launch.style == "broadcast"
    [case] = _load(tmp_path, launch="{style: map, block: 32}")
    assert case.launch.block == (32,)


@pytest.mark.parametrize("kw, line, key, text", [
    ({"second": "z"}, 7, "args.z", "argument 2 is 'z' but operand 1 of add(x, y) is 'y'"),
    ({"dest": "{scalar: {value: 1.0}}"}, 5, "args.out", "destination and must be an array"),
    ({"launch": "{style: broadcast, threads: 4}"}, 3, "launch.threads", "one thread per destination element"),
])
def test_loader_refuses_malformed_broadcast_cases(tmp_path, kw, line, key, text):
    with pytest.raises(CaseError) as info:
        _load(tmp_path, **kw)
    assert (info.value.line, info.value.key) == (line, key)
    assert text in str(info.value)


def test_a_compiled_device_function_is_specialized_through_its_python_function(be, split):
    from numba import cuda
    from harness.broadcast import broadcast_into, launcher_for

    @cuda.jit(device=True)
    def scaled(T, a):
        return T(a) * 3
    x = np.arange(4, dtype=np.float32)
    out = be.zeros(4, np.float64)
    broadcast_into(scaled, out, np.float64, x, engine=split)
    np.testing.assert_array_equal(host(be, out), 3 * x.astype(np.float64))
    text = Path(launcher_for(split).generated(scaled, out, np.float64, x)[1]).read_text()
    assert "def scaled__T(a):" in text and "dest[i] = scaled__T(a[i])" in text


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_broadcast_refuses_a_destination_aliased_with_a_duplicated_operand(be, k, split, mode):
    """x .= axpy.(a, x, y) with x Duplicated twice (one buffer, one shadow): refused by the
    engine, naming both arguments, not differentiated as two arrays."""
    from harness.broadcast import broadcast_into
    x, dx = be.asarray(np.ones(8)), be.asarray(np.ones(8))
    with pytest.raises(ActivityError, match=r"argument 0 \('dest'\) and argument 2 \('x'\) share memory"):
        broadcast_into(k.axpy, Duplicated(x, dx), Const(2.0), Duplicated(x, dx), Const(be.asarray(np.ones(8))),
                       mode=mode, engine=split, block=8)
