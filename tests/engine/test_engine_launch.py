"""The split-argument launcher as a user calls it from Python:

    from harness.engine import launch, LaunchConfig, Const, Duplicated, DuplicatedNoNeed, Active, BatchDuplicated
    launch(axpy, LaunchConfig.threads(n), Duplicated(out, dout), Active(a), Duplicated(x, dx), Const(y), mode="reverse")

Every derivative is compared with its analytic value; the activity errors are checked for their
class, argument position and parameter name.
"""
from __future__ import annotations

import numpy as np
import pytest

from harness.core.activity import Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed
from harness.engine.runtime.launch import LaunchConfig
from harness.core.errors import ActivityError, KernelError

N = 16
A = 1.5


@pytest.fixture
def be(launching_backend):
    return launching_backend


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    return {"x": rng.standard_normal(N), "y": rng.standard_normal(N), "w": rng.standard_normal(N),
            "vx": rng.standard_normal(N), "vy": rng.standard_normal(N), "r": rng.standard_normal(N)}


def dev(be, a):
    return be.asarray(np.array(a, dtype=np.float64))


def host(be, a):
    return be.to_host(a)


CONFIG = LaunchConfig.threads(N, 8)


# ----------------------------------------------------------------------------- forward mode

def test_forward_all_duplicated_and_active(kernels, be, data):
    from harness.engine import launch                     # the module-level, default-engine launcher
    x, y, vx, vy = data["x"], data["y"], data["vx"], data["vy"]
    out, dout = dev(be, np.zeros(N)), dev(be, data["r"])  # an output's incoming tangent is irrelevant
    result = launch(kernels.axpy, CONFIG, Duplicated(out, dout), Active(A, 0.25),
                    Duplicated(dev(be, x), dev(be, vx)), Duplicated(dev(be, y), dev(be, vy)), mode="forward")
    np.testing.assert_allclose(host(be, out), A * x + y, rtol=1e-14)
    np.testing.assert_allclose(host(be, dout), 0.25 * x + A * vx + vy, rtol=1e-14)
    assert result.adjoints == {}, "forward mode returns no adjoints"


def test_forward_const_arguments_carry_no_tangent(kernels, engine, be, data):
    x, y, vx = data["x"], data["y"], data["vx"]
    out, dout = dev(be, np.zeros(N)), dev(be, np.zeros(N))
    engine.launch(kernels.axpy, CONFIG, Duplicated(out, dout), Const(A), Duplicated(dev(be, x), dev(be, vx)),
                  Const(dev(be, y)), mode="forward")
    np.testing.assert_allclose(host(be, dout), A * vx, rtol=1e-14)
    # a bare value is Const too
    out, dout = dev(be, np.zeros(N)), dev(be, np.zeros(N))
    engine.launch(kernels.axpy, CONFIG, Duplicated(out, dout), A, Duplicated(dev(be, x), dev(be, vx)),
                  dev(be, y), mode="forward")
    np.testing.assert_allclose(host(be, dout), A * vx, rtol=1e-14)


def test_forward_duplicated_scalar_is_a_tangent(kernels, engine, be, data):
    x = data["x"]
    out, dout = dev(be, np.zeros(N)), dev(be, np.zeros(N))
    engine.launch(kernels.axpy, CONFIG, Duplicated(out, dout), Duplicated(A, 2.0), Const(dev(be, x)),
                  Const(dev(be, data["y"])), mode="forward")
    np.testing.assert_allclose(host(be, dout), 2.0 * x, rtol=1e-14)


def test_forward_duplicated_no_need(kernels, engine, be, data):
    x, vx = data["x"], data["vx"]
    out, dout = dev(be, np.full(N, 7.0)), dev(be, np.zeros(N))
    xd = dev(be, x)
    engine.launch(kernels.square_into, CONFIG, DuplicatedNoNeed(out, dout), Duplicated(xd, dev(be, vx)),
                  mode="forward")
    np.testing.assert_allclose(host(be, dout), 2 * x * vx, rtol=1e-14)
    np.testing.assert_array_equal(host(be, out), 7.0, err_msg="the unneeded primal output was not written")
    np.testing.assert_array_equal(host(be, xd), x)


# ----------------------------------------------------------------------------- reverse mode

def test_reverse_accumulates_inputs_and_consumes_outputs(kernels, engine, be, data):
    x, y, w = data["x"], data["y"], data["w"]
    dx0, dy0 = data["vx"], data["vy"]
    out, dout, dx, dy = dev(be, np.zeros(N)), dev(be, w), dev(be, dx0), dev(be, dy0)
    result = engine.launch(kernels.axpy, CONFIG, Duplicated(out, dout), Active(A),
                           Duplicated(dev(be, x), dx), Duplicated(dev(be, y), dy), mode="reverse")
    np.testing.assert_allclose(host(be, dx), dx0 + A * w, rtol=1e-14)     # dx += a w
    np.testing.assert_allclose(host(be, dy), dy0 + w, rtol=1e-14)         # dy += w
    np.testing.assert_array_equal(host(be, dout), 0.0)                     # out overwritten: consumed
    assert set(result.adjoints) == {"a"}
    assert result.adjoints["a"] == pytest.approx(float(np.dot(w, x)), rel=1e-12)
    np.testing.assert_allclose(host(be, out), A * x + y, rtol=1e-14)      # primal ends in its final state


def test_reverse_const_scalar_returns_no_adjoint(kernels, engine, be, data):
    x, w = data["x"], data["w"]
    dx = dev(be, np.zeros(N))
    result = engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), dev(be, w)), Const(A),
                           Duplicated(dev(be, x), dx), Const(dev(be, data["y"])), mode="reverse")
    assert result.adjoints == {}
    np.testing.assert_allclose(host(be, dx), A * w, rtol=1e-14)


def test_reverse_shared_read_sums_over_threads(kernels, engine, be, data):
    """Every thread reads x[0]: its adjoint is the sum of all threads' contributions."""
    w = data["w"]
    dx = dev(be, np.array([0.5]))
    engine.launch(kernels.read_first, CONFIG, Duplicated(dev(be, np.zeros(N)), dev(be, w)),
                  Duplicated(dev(be, [2.0]), dx), mode="reverse")
    assert host(be, dx)[0] == pytest.approx(0.5 + float(np.dot(w, np.arange(N))), rel=1e-12)


def test_reverse_duplicated_no_need(kernels, engine, be, data):
    x, w = data["x"], data["w"]
    out, dout, dx = dev(be, np.full(N, 7.0)), dev(be, w), dev(be, np.zeros(N))
    engine.launch(kernels.square_into, CONFIG, DuplicatedNoNeed(out, dout), Duplicated(dev(be, x), dx),
                  mode="reverse")
    np.testing.assert_allclose(host(be, dx), 2 * x * w, rtol=1e-14)
    np.testing.assert_array_equal(host(be, dout), 0.0)
    np.testing.assert_array_equal(host(be, out), 7.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inplace_square_reverse_and_forward(kernels, engine, be, dtype):
    """A[0] *= A[0] (Enzyme.jl 2395): reverse dA <- 2 A_in dA, forward dA <- 2 A_in dA too."""
    a = be.asarray(np.array([3.0], dtype=dtype))
    da = be.asarray(np.array([1.5], dtype=dtype))
    engine.launch(kernels.square_first, LaunchConfig.of(1, 1), Duplicated(a, da), mode="reverse")
    assert host(be, da)[0] == pytest.approx(9.0) and host(be, a)[0] == pytest.approx(9.0)
    a = be.asarray(np.array([3.0], dtype=dtype))
    da = be.asarray(np.array([0.5], dtype=dtype))
    engine.launch(kernels.square_first, LaunchConfig.of(1, 1), Duplicated(a, da), mode="forward")
    assert host(be, da)[0] == pytest.approx(3.0) and host(be, a)[0] == pytest.approx(9.0)


# ----------------------------------------------------------------------------- batches

@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_batch_duplicated_equals_separate_duplicated_runs(kernels, engine, be, data, mode):
    rng = np.random.default_rng(5)
    k = 3
    seeds = {name: [rng.standard_normal(N) for _ in range(k)] for name in ("out", "x", "y")}
    tangents_a = (0.5, -1.0, 2.0)
    x, y = data["x"], data["y"]

    def one(lane):
        shadows = {n: dev(be, seeds[n][lane]) for n in seeds}
        result = engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), shadows["out"]),
                               Active(A, tangents_a[lane]), Duplicated(dev(be, x), shadows["x"]),
                               Duplicated(dev(be, y), shadows["y"]), mode=mode)
        return {n: host(be, s) for n, s in shadows.items()}, result.adjoints.get("a")

    shadows = {n: tuple(dev(be, s) for s in seeds[n]) for n in seeds}
    result = engine.launch(kernels.axpy, CONFIG, BatchDuplicated(dev(be, np.zeros(N)), shadows["out"]),
                           Active(A, tangents_a), BatchDuplicated(dev(be, x), shadows["x"]),
                           BatchDuplicated(dev(be, y), shadows["y"]), mode=mode)
    for lane in range(k):
        expected, adjoint = one(lane)
        for n in seeds:
            np.testing.assert_allclose(host(be, shadows[n][lane]), expected[n], rtol=1e-14,
                                       err_msg=f"lane {lane} of {n}")
        if mode == "reverse":
            assert result.adjoints["a"][lane] == pytest.approx(adjoint, rel=1e-12)
    if mode == "forward":     # and against the analytic tangent
        for lane in range(k):
            np.testing.assert_allclose(host(be, shadows["out"][lane]),
                                       tangents_a[lane] * x + A * seeds["x"][lane] + seeds["y"][lane], rtol=1e-13)
    else:
        assert isinstance(result.adjoints["a"], tuple) and len(result.adjoints["a"]) == k


# ----------------------------------------------------------------------------- refused launches

def _gather_args(be, idx_activity):
    idx = be.asarray(np.arange(N, dtype=np.int32)[::-1].copy())
    out = Duplicated(dev(be, np.zeros(N)), dev(be, np.ones(N)))
    x = Duplicated(dev(be, np.ones(N)), dev(be, np.zeros(N)))
    return [out, x, idx_activity(idx)]


def test_int_array_duplicated_is_an_activity_error(kernels, engine, be):
    args = _gather_args(be, lambda idx: Duplicated(idx, be.asarray(np.zeros(N, dtype=np.int32))))
    with pytest.raises(ActivityError, match=r"argument 2 \('idx'\).*int32 arrays cannot be differentiated") as info:
        engine.launch(kernels.gather, CONFIG, *args, mode="reverse")
    assert info.value.argument == 2 and info.value.param == "idx"
    assert engine._plans == {}, "refused before anything was compiled"


def test_int_array_const_gathers(kernels, engine, be):
    args = _gather_args(be, Const)
    dx = args[1].shadow
    engine.launch(kernels.gather, CONFIG, *args, mode="reverse")
    np.testing.assert_array_equal(host(be, dx), np.ones(N))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_active_array_is_an_activity_error(kernels, engine, be, mode):
    with pytest.raises(ActivityError, match="Active applies to scalars only") as info:
        engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), dev(be, np.zeros(N))), Const(A),
                      Active(dev(be, np.ones(N))), Const(dev(be, np.ones(N))), mode=mode)
    assert (info.value.argument, info.value.param) == (2, "x")


@pytest.mark.parametrize("shadow", [np.zeros(N + 1), np.zeros((N, 1)), np.zeros(N, dtype=np.float32)],
                         ids=["length", "rank", "dtype"])
def test_mismatched_shadow_is_an_activity_error(kernels, engine, be, shadow):
    with pytest.raises(ActivityError, match=r"argument 2 \('x'\): shadow 0 must be") as info:
        engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), dev(be, np.zeros(N))), Const(A),
                      Duplicated(dev(be, np.ones(N)), be.asarray(shadow)), Const(dev(be, np.ones(N))),
                      mode="forward")
    assert (info.value.argument, info.value.param) == (2, "x")


def test_duplicated_scalar_in_reverse_is_an_activity_error(kernels, engine, be):
    with pytest.raises(ActivityError, match="use Active in reverse mode") as info:
        engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), dev(be, np.zeros(N))),
                      Duplicated(A, 1.0), Const(dev(be, np.ones(N))), Const(dev(be, np.ones(N))), mode="reverse")
    assert (info.value.argument, info.value.param) == (1, "a")


def test_int_scalar_active_is_an_activity_error(kernels, engine, be):
    with pytest.raises(ActivityError, match="int64 scalars cannot be differentiated") as info:
        engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), dev(be, np.zeros(N))), Active(3),
                      Const(dev(be, np.ones(N))), Const(dev(be, np.ones(N))), mode="reverse")
    assert info.value.param == "a"


def test_mixed_batch_widths_are_an_activity_error(kernels, engine, be):
    two = BatchDuplicated(dev(be, np.zeros(N)), (dev(be, np.zeros(N)), dev(be, np.zeros(N))))
    three = BatchDuplicated(dev(be, np.ones(N)), tuple(dev(be, np.zeros(N)) for _ in range(3)))
    with pytest.raises(ActivityError, match=r"mix batch widths \[2, 3\]"):
        engine.launch(kernels.axpy, CONFIG, two, Const(A), three, Const(dev(be, np.ones(N))), mode="forward")
    one = Duplicated(dev(be, np.ones(N)), dev(be, np.zeros(N)))
    with pytest.raises(ActivityError, match=r"mix batch widths \[1, 2\]"):
        engine.launch(kernels.axpy, CONFIG, two, Const(A), one, Const(dev(be, np.ones(N))), mode="reverse")


def test_active_tangent_count_must_match_batch_width(kernels, engine, be):
    batch = lambda: BatchDuplicated(dev(be, np.zeros(N)), tuple(dev(be, np.zeros(N)) for _ in range(3)))  # noqa: E731
    with pytest.raises(ActivityError) as info:
        engine.launch(kernels.axpy, CONFIG, batch(), Active(A, (1.0, 2.0)), batch(), batch(), mode="forward")
    assert (info.value.argument, info.value.param) == (1, "a")


@pytest.mark.parametrize("bad", [{"k": 1}, [1.0, 2.0], None, "text"], ids=["dict", "list", "none", "str"])
def test_non_bitstype_argument_is_a_kernel_error(kernels, engine, be, bad):
    with pytest.raises(KernelError, match=r"argument 3 \('y'\) is of type") as info:
        engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), dev(be, np.zeros(N))), Const(A),
                      Const(dev(be, np.ones(N))), bad, mode="primal")
    assert (info.value.argument, info.value.param) == (3, "y")


def test_wrong_argument_count_is_a_kernel_error(kernels, engine, be):
    with pytest.raises(KernelError, match=r"takes 4 arguments \(out, a, x, y\) but 3 were given"):
        engine.launch(kernels.axpy, CONFIG, dev(be, np.zeros(N)), A, dev(be, np.ones(N)))


def test_unknown_mode_is_refused(kernels, engine, be):
    with pytest.raises(ValueError, match="mode must be one of"):
        engine.launch(kernels.axpy, CONFIG, dev(be, np.zeros(N)), A, dev(be, np.ones(N)), dev(be, np.ones(N)),
                      mode="backward")


# ----------------------------------------------------------------------------- launch configurations

@pytest.mark.parametrize("n, block, grid, blocks", [
    (64, 32, (2,), (32,)),
    (100, 32, (4,), (32,)),
    (10, 128, (1,), (10,)),          # never more threads per block than needed
    (1, 128, (1,), (1,)),
    (256, 128, (2,), (128,)),
])
def test_launch_config_threads_1d(n, block, grid, blocks):
    config = LaunchConfig.threads(n, block)
    assert config.grid == grid and config.block == blocks
    assert config.grid[0] * config.block[0] >= n
    assert config.shape.dims == ((0,) if n > 1 else ())


@pytest.mark.parametrize("n, block, grid, blocks", [
    ((20, 10), None, (2, 1), (16, 10)),
    ((64, 64), None, (4, 4), (16, 16)),
    ((8, 12), (4, 4), (2, 3), (4, 4)),
    ((1, 40), None, (1, 3), (1, 16)),
])
def test_launch_config_threads_2d(n, block, grid, blocks):
    config = LaunchConfig.threads(n, block) if block else LaunchConfig.threads(n)
    assert config.grid == grid and config.block == blocks
    assert all(g * b >= k for g, b, k in zip(config.grid, config.block, n))
    assert config.shape.dims == tuple(d for d in range(2) if n[d] > 1)


def test_launch_config_of():
    assert LaunchConfig.of(4, 32) == LaunchConfig((4,), (32,))
    assert LaunchConfig.of([2, 3], (4, 4)).shape.dims == (0, 1)
    assert LaunchConfig.of((2, 1), (1, 1)).shape.dims == (0,)


def test_2d_launch_reverse(kernels, engine, be):
    """affine-like 2-D kernel: thread-owned (i, j) in a 2-D launch, checked against the analytic adjoint."""
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((8, 12)), rng.standard_normal((8, 12))
    dx = dev(be, np.zeros((8, 12)))
    out, dout = dev(be, np.zeros((8, 12))), dev(be, w)
    engine.launch(kernels.grid2_owned, LaunchConfig.threads((8, 12), (4, 4)), Duplicated(out, dout),
                  Duplicated(dev(be, x), dx), mode="reverse")
    np.testing.assert_allclose(host(be, dx), 2.0 * w, rtol=1e-14)
    np.testing.assert_allclose(host(be, out), 2.0 * x, rtol=1e-14)


# ----------------------------------------------------------------------------- aliasing and plan keys

@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_launch_refuses_one_buffer_passed_as_two_duplicated_arguments(kernels, engine, be, data, mode):
    """out and x of out[i] = a x[i] + y[i] as one buffer with one shadow: differentiated as two
    arguments, reverse mode gave d(buf) = (a + 1) w instead of a w, silently."""
    buf, dbuf = dev(be, data["x"]), dev(be, data["w"])
    with pytest.raises(ActivityError, match=r"argument 0 \('out'\) and argument 2 \('x'\) share memory") as e:
        engine.launch(kernels.axpy, CONFIG, Duplicated(buf, dbuf), Const(A), Duplicated(buf, dbuf),
                      Const(dev(be, data["y"])), mode=mode)
    assert (e.value.argument, e.value.param) == (2, "x")


def test_launch_refuses_a_const_view_of_a_differentiable_array_and_a_shared_shadow(kernels, engine, be, data):
    x, y = dev(be, data["x"]), dev(be, data["y"])
    with pytest.raises(ActivityError, match=r"argument 2 \('x'\) and argument 3 \('y'\) share memory"):
        engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), dev(be, np.ones(N))), Const(A),
                      Duplicated(x, dev(be, data["vx"])), Const(x), mode="reverse")
    shadow = dev(be, np.zeros(N))
    with pytest.raises(ActivityError, match=r"the shadow of argument 0 \('out'\) and the shadow of argument 2"):
        engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), shadow), Const(A),
                      Duplicated(x, shadow), Const(y), mode="reverse")
    with pytest.raises(ActivityError, match=r"argument 2 \('x'\) is passed as its own shadow"):
        engine.launch(kernels.axpy, CONFIG, Duplicated(dev(be, np.zeros(N)), dev(be, np.ones(N))), Const(A),
                      Duplicated(x, x), Const(y), mode="forward")


def test_launch_allows_const_aliasing(kernels, engine, be, data):
    x = dev(be, data["x"])
    out, dout = dev(be, np.zeros(N)), dev(be, np.ones(N))
    engine.launch(kernels.axpy, CONFIG, Duplicated(out, dout), Active(A), Const(x), Const(x), mode="reverse")
    np.testing.assert_allclose(host(be, out), A * data["x"] + data["x"], rtol=1e-14)


def test_a_refusal_does_not_depend_on_earlier_launches(kernels, engine, be):
    """A plan's key holds the launch shape: the nested reverse of A[i] = 2 A[i + 1] is fine in
    one thread and refused in sixteen, whichever launch came first."""
    import importlib.util
    from pathlib import Path

    from harness.core.errors import UnsupportedError
    spec = importlib.util.spec_from_file_location("soundness_kernels", Path(__file__).parents[2] / "kernels/soundness.py")
    sk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sk)
    A0 = np.arange(1.0, 17.0)
    engine.launch(sk.dshift_left, LaunchConfig.of(1, 1), dev(be, A0), dev(be, np.ones(16)), mode="primal")
    with pytest.raises(UnsupportedError, match="cross-thread write-after-read"):
        engine.launch(sk.dshift_left, LaunchConfig.threads(16, 16), dev(be, A0), dev(be, np.ones(16)), mode="primal")
    n = 8                                        # the options are part of the key too
    args = lambda: (Duplicated(dev(be, np.zeros(n)), dev(be, np.ones(n))),   # noqa: E731
                    Duplicated(dev(be, np.ones(n)), dev(be, np.zeros(n))),
                    Const(be.asarray(np.arange(n, dtype=np.int64))), Const(np.int64(3)))
    engine.launch(sk.weight_by_ticket, LaunchConfig.threads(n, n), *args(), mode="reverse")
    engine.options.tape_size = 2
    with pytest.raises(UnsupportedError, match="ran more than 2 iterations"):
        engine.launch(sk.weight_by_ticket, LaunchConfig.threads(n, n), *args(), mode="reverse")


@pytest.mark.parametrize("grid, block", [(0, 32), (1, -4), ((1, 2, 3, 4), 8), (1.5, 32), (True, 32), ("4", 32)])
def test_launch_config_names_a_bad_dimension(grid, block):
    with pytest.raises(ValueError, match="LaunchConfig (grid|block)="):
        LaunchConfig(grid, block)


def test_launch_config_takes_numbas_spellings():
    assert LaunchConfig(4, 128) == LaunchConfig((4,), (128,)) == LaunchConfig([4], np.int64(128))
    assert LaunchConfig((2, 3), (16, 8)).grid == (2, 3)


def test_a_grid_block_pair_is_taken_as_numba_takes_it(kernels, engine, be, data):
    x, y = data["x"], data["y"]
    out = dev(be, np.zeros(N))
    engine.launch(kernels.axpy, (2, 8), out, Const(A), dev(be, x), dev(be, y))
    np.testing.assert_allclose(host(be, out), A * x + y, rtol=1e-14)


@pytest.mark.parametrize("config", [(2,), (2, 8, 1), "2, 8", 16, None])
def test_any_other_launch_configuration_is_a_clear_type_error(kernels, engine, be, config):
    with pytest.raises(TypeError, match="expected LaunchConfig\\(grid, block\\) or a \\(grid, block\\) pair"):
        engine.launch(kernels.axpy, config, dev(be, np.zeros(N)), Const(A), dev(be, np.ones(N)), dev(be, np.ones(N)))
