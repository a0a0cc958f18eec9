"""The benchmark's hand-written kernels compute what the engine's generated kernels compute: both
launched on copies of the same buffers (on the simulator or a GPU), every array and the Active
buffer must agree. A ratio in `harness bench` then compares kernels with the same semantics."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import ROOT

CASES = [(b, mode, label) for b in __import__("harness.bench.suite", fromlist=["BENCHES"]).BENCHES
         for mode, hands in b.hand.items() for label in hands if label != "hand_gather"]


def _copy(backend, values):
    return {k: ((backend.asarray(backend.to_host(v).copy()), backend.asarray(backend.to_host(s).copy()) if s is not None else None)
                if backend.is_array(v) else (v, s)) for k, (v, s) in values.items()}


@pytest.mark.parametrize("bench, mode, label", CASES, ids=[f"{b.name}-{m}-{label}" for b, m, label in CASES])
def test_hand_written_kernel_matches_generated(launching_backend, engine, bench, mode, label):
    from harness.bench.suite import hand_launcher
    from harness.engine.launch import LaunchConfig
    from harness.inputs import load_kernel

    backend = launching_backend
    n = 150                                   # a partial last warp and a partial block
    kernel = load_kernel(bench.kernel, ROOT)
    config = LaunchConfig.threads(n, min(bench.block, 64))
    base = bench.values(np, n, seed=3)
    base = {k: ((backend.asarray(v), backend.asarray(s) if s is not None else None) if isinstance(v, np.ndarray)
                else (v, s)) for k, (v, s) in base.items()}
    gen_vals, hand_vals = _copy(backend, base), _copy(backend, base)
    gen = engine.bind(kernel, config, *bench.wrapped(gen_vals, mode), mode=mode)
    gen.launch()
    hand_bound = engine.bind(kernel, config, *bench.wrapped(hand_vals, mode), mode=mode)
    hand_launcher(bench.hand[mode][label], config, hand_bound.grid)(hand_bound.kernel_args)
    backend.synchronize()
    for name, (v, s) in gen_vals.items():
        hv, hs = hand_vals[name]
        for what, a, b in (("value", v, hv), ("shadow", s, hs)):
            if a is None or not backend.is_array(a):
                continue
            np.testing.assert_allclose(backend.to_host(b), backend.to_host(a), rtol=2e-5, atol=2e-5,
                                       err_msg=f"{bench.name} {mode} {label}: {name} {what}")
    if gen.active_out is not None:
        np.testing.assert_allclose(backend.to_host(hand_bound.active_out), backend.to_host(gen.active_out),
                                   rtol=1e-5, err_msg="Active adjoint")


def test_bench_byte_model_counts_streams():
    from harness.bench.suite import BENCHES
    axpy = next(b for b in BENCHES if b.name == "axpy")
    assert (axpy.streams("primal"), axpy.streams("forward"), axpy.streams("reverse")) == (3, 6, 9)


def test_host_oracle_scaling_problem_passes_every_oracle():
    """`harness bench --host` times the oracles on a numpy axpy: a correct problem, so every
    oracle passes (a timing of failing oracles would measure the refinements instead)."""
    from harness.bench.host_problem import host_oracle_scaling
    rows = host_oracle_scaling([6])
    assert [r["mode"] for r in rows] == ["forward", "reverse"]
    for r in rows:
        assert set(r["verdicts"].values()) == {"pass"}, r


def test_device_oracle_problem_passes_every_oracle(launching_backend, monkeypatch):
    """`harness bench --oracle-device` times the oracles on DeviceAxpy (cupy arrays on a GPU). Its
    problem semantics, and the oracles' device branch of the random draws, checked here on the
    simulator with numpy standing in for cupy."""
    import sys
    import types

    from harness.bench.device_problem import DeviceAxpy
    from harness.engine.launch import Engine
    from harness.inputs import load_kernel
    from harness.oracles import run_gradient_oracles

    class RandomState:
        def __init__(self, seed):
            self.rng = np.random.RandomState(seed)

        def standard_normal(self, size=None, dtype=np.float64):
            return self.rng.standard_normal(size).astype(dtype)
    stand_in = types.SimpleNamespace(random=types.SimpleNamespace(RandomState=RandomState), float32=np.float32,
                                     float64=np.float64, zeros=np.zeros, array=np.array, asarray=np.asarray)
    monkeypatch.setitem(sys.modules, "cupy", stand_in)
    problem = DeviceAxpy(Engine(launching_backend), load_kernel("kernels/elementwise.py:axpy", ROOT), 200)
    for mode in ("forward", "reverse"):
        verdicts = run_gradient_oracles(problem, mode, rng=0)
        assert {v.verdict for v in verdicts} == {"pass"}, [(v.name, v.message) for v in verdicts]
