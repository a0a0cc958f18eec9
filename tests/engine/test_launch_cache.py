"""Engine.launch's per-call-site cache (harness/engine/runtime/launch_cache.py): a repeated call with
arguments of the same description runs the packed launch again; any change of what the launch
derives from its arguments (dtype, layout, activity, launch shape, buffers, scalar values, engine
options) must miss it and give the results of a fresh launch. Costs are measured by
`harness bench --launch-host`, not here."""
from __future__ import annotations

import numpy as np
import pytest

from harness.core.activity import Active, Const, Duplicated
from harness.engine.runtime.launch import LaunchConfig
from harness.core.errors import ActivityError

N = 16
CONFIG = LaunchConfig.threads(N, 8)


@pytest.fixture
def counted(launching_backend, engine, monkeypatch):
    """The engine, with a count of the launches it packs (one per cache miss)."""
    packs = []
    real = launching_backend.prepare_launch

    def prepare(compiled, grid, block, args):
        packs.append((grid, block))
        return real(compiled, grid, block, args)
    monkeypatch.setattr(launching_backend, "prepare_launch", prepare)
    return engine, packs


def dev(be, a, dtype=np.float64):
    return be.asarray(np.array(a, dtype=dtype))


def _axpy_reverse(kernels, engine, be, x, y, dout, a=1.5, dtype=np.float64, config=CONFIG):
    out = dev(be, np.zeros(N), dtype)
    dx, dy = dev(be, np.zeros(N), dtype), dev(be, np.zeros(N), dtype)
    r = engine.launch(kernels.axpy, config, Duplicated(out, dev(be, dout, dtype)), Active(a),
                      Duplicated(dev(be, x, dtype), dx), Duplicated(dev(be, y, dtype), dy), mode="reverse")
    return r, be.to_host(dx), be.to_host(dy)


def test_repeated_call_on_the_same_buffers_packs_once(kernels, counted, launching_backend):
    engine, packs = counted
    be = launching_backend
    x, y, w = (np.random.default_rng(k).standard_normal(N) for k in range(3))
    out, dout = dev(be, np.zeros(N)), dev(be, w)
    xd, dx, yd, dy = dev(be, x), dev(be, np.zeros(N)), dev(be, y), dev(be, np.zeros(N))
    for k in range(3):
        # fresh annotation objects every call, as a user writes them
        r = engine.launch(kernels.axpy, CONFIG, Duplicated(out, dout), Active(1.5), Duplicated(xd, dx),
                          Duplicated(yd, dy), mode="reverse")
        # the Active adjoint is this launch's own (the buffer is zeroed), not a running sum
        assert r.adjoints["a"] == pytest.approx(float(np.dot(w, x)) if k == 0 else 0.0, rel=1e-12, abs=1e-12)
    assert len(packs) == 1
    np.testing.assert_allclose(be.to_host(dx), 1.5 * w, rtol=1e-14)   # the cotangent was consumed by call 1


@pytest.mark.parametrize("change", ["dtype", "layout", "activity", "launch shape", "scalar value", "buffers",
                                    "options"])
def test_a_change_misses_the_cache_and_gives_a_fresh_launchs_results(kernels, counted, launching_backend, change):
    engine, packs = counted
    be = launching_backend
    rng = np.random.default_rng(7)
    x, y, vx, vy = (rng.standard_normal(2 * N) for _ in range(4))
    a = 1.5

    def forward(x_arr, vx_arr, a_val, config=CONFIG, x_activity=Duplicated):
        out, dout = be.zeros(N, x_arr.dtype), be.zeros(N, x_arr.dtype)
        xa = x_activity(x_arr, vx_arr) if x_activity is Duplicated else Const(x_arr)
        engine.launch(kernels.axpy, config, Duplicated(out, dout), Const(a_val), xa,
                      Duplicated(dev(be, y[:N], x_arr.dtype), dev(be, vy[:N], x_arr.dtype)), mode="forward")
        return be.to_host(out), be.to_host(dout)

    xd, vxd = dev(be, x[:N]), dev(be, vx[:N])
    forward(xd, vxd, a)
    forward(xd, vxd, a)                      # the same description (new out/dout: a miss, see below)
    first = len(packs)
    if change == "dtype":
        got = forward(dev(be, x[:N], np.float32), dev(be, vx[:N], np.float32), np.float32(a))
        expect = (np.float32(a) * x[:N].astype(np.float32) + y[:N].astype(np.float32),
                  np.float32(a) * vx[:N].astype(np.float32) + vy[:N].astype(np.float32))
        tol = 1e-6
    elif change == "layout":                 # every other element of a longer array: layout 'A'
        got = forward(dev(be, x)[::2], dev(be, vx)[::2], a)
        expect, tol = (a * x[::2] + y[:N], a * vx[::2] + vy[:N]), 1e-14
    elif change == "activity":
        got = forward(xd, vxd, a, x_activity=Const)
        expect, tol = (a * x[:N] + y[:N], vy[:N]), 1e-14
    elif change == "launch shape":
        got = forward(xd, vxd, a, config=LaunchConfig.threads(N, 4))
        expect, tol = (a * x[:N] + y[:N], a * vx[:N] + vy[:N]), 1e-14
    elif change == "scalar value":
        got = forward(xd, vxd, 2.5)
        expect, tol = (2.5 * x[:N] + y[:N], 2.5 * vx[:N] + vy[:N]), 1e-14
    elif change == "buffers":
        got = forward(dev(be, x[N:]), dev(be, vx[N:]), a)
        expect, tol = (a * x[N:] + y[:N], a * vx[N:] + vy[:N]), 1e-14
    else:
        engine.options.fastmath = not engine.options.fastmath
        got = forward(xd, vxd, a)
        expect, tol = (a * x[:N] + y[:N], a * vx[:N] + vy[:N]), 1e-12
    assert len(packs) > first, f"a change of {change} must not reuse the packed launch"
    for g, e in zip(got, expect):
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)


def test_same_description_hits_even_with_new_annotation_objects(kernels, counted, launching_backend):
    engine, packs = counted
    be = launching_backend
    out, dout, x, vx, y, vy = (dev(be, np.full(N, float(k))) for k in range(6))
    for _ in range(4):
        engine.launch(kernels.axpy, CONFIG, Duplicated(out, dout), 1.5, Duplicated(x, vx), Duplicated(y, vy),
                      mode="forward")
    assert len(packs) == 1
    np.testing.assert_allclose(be.to_host(dout), 1.5 * 3.0 + 5.0)


def test_a_call_that_aliases_after_a_cached_one_is_still_refused(kernels, engine, launching_backend):
    be = launching_backend
    out, dout, x, dx, y = (dev(be, np.zeros(N)) for _ in range(5))
    engine.launch(kernels.axpy, CONFIG, Duplicated(out, dout), 1.5, Duplicated(x, dx), Const(y), mode="reverse")
    with pytest.raises(ActivityError, match="own shadow"):
        engine.launch(kernels.axpy, CONFIG, Duplicated(out, dout), 1.5, Duplicated(x, x), Const(y), mode="reverse")


def test_results_match_an_uncached_engine(kernels, launching_backend):
    """Ten launches through one engine (cached after the first) against ten fresh engines."""
    from harness.engine.runtime.launch import Engine
    be = launching_backend
    cached = Engine(be)
    rng = np.random.default_rng(11)
    for _ in range(10):
        x, y, w = rng.standard_normal(N), rng.standard_normal(N), rng.standard_normal(N)
        r1, dx1, dy1 = _axpy_reverse(kernels, cached, be, x, y, w)
        r2, dx2, dy2 = _axpy_reverse(kernels, Engine(be), be, x, y, w)
        assert r1.adjoints == r2.adjoints
        np.testing.assert_array_equal(dx1, dx2)
        np.testing.assert_array_equal(dy1, dy2)


def test_fingerprint_describes_values_not_objects():
    from harness.engine.runtime.launch_cache import fingerprint
    a = np.zeros(8)
    view = a[:]                               # another object over the same memory and geometry
    assert fingerprint((Duplicated(a, a), 1.5)) == fingerprint((Duplicated(view, view), 1.5))
    assert fingerprint((Const(a),)) != fingerprint((a,))            # annotated and bare are told apart
    assert fingerprint((1,)) != fingerprint((1.0,)) != fingerprint((True,))
    assert fingerprint((a[::2],)) != fingerprint((a[:4],))          # same length, other strides
    assert fingerprint((a.astype(np.float32),)) != fingerprint((a,))
    assert fingerprint((object(),)) is None                         # not describable: never cached
