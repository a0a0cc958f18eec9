"""Where a reverse kernel does its work (emit_adjoints.hoist_partials, emit_prefetch.hoist_prefetch):
the costly partials of primitives outside dynamic loops are computed in the forward sweep next to
their primal, so the reverse sweep only multiplies and adds, and a block's thread-owned shadow
reads are issued with its first loads. Read from the generated source the way a launch produces
it (Engine.prepare); the gradients of the rearranged kernels are checked against closed forms."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from harness.core.activity import Duplicated
from tests.conftest import ROOT


def _kernel(ref: str):
    from harness.cases.inputs import load_kernel
    return load_kernel(ref, ROOT)


def _cfg(n):
    from harness.engine.runtime.launch import LaunchConfig
    return LaunchConfig.threads(n, 32)


def _sweeps(engine, kernel, args, n) -> tuple[str, str]:
    """The generated reverse kernel's forward sweep and reverse sweep, as source text."""
    plan, _ = engine.prepare(kernel, _cfg(n), args, "reverse")
    text = Path(plan.source_path).read_text()
    forward, _, reverse = text.partition("# reverse sweep")
    assert reverse, "the generated reverse kernel has no reverse-sweep marker"
    return forward, reverse


def _dup(backend, n, seed):
    rng = np.random.default_rng(seed)
    return Duplicated(backend.asarray(rng.uniform(0.5, 1.5, n)), backend.asarray(np.zeros(n)))


def test_math_heavy_reverse_sweep_only_multiplies_and_adds(engine, backend):
    n = 32
    args = [Duplicated(backend.asarray(np.zeros(n)), backend.asarray(np.zeros(n))), _dup(backend, n, 1), _dup(backend, n, 2)]
    forward, reverse = _sweeps(engine, _kernel("kernels/elementwise.py:math_heavy"), args, n)
    assert "math." not in reverse and " / " not in reverse and "**" not in reverse
    # cos(u), sin's partial, is computed right after sin(u): NVVM then shares one range reduction
    assert re.search(r"^\s*(\w+) = math\.sin\(u\)\n\s*_pd\d+ = math\.cos\(u\)$", forward, re.M)
    # the shadow reads come before the primal's own loads, not between the sweeps
    lines = [ln.strip() for ln in forward.splitlines()]
    first_shadow = min(k for k, ln in enumerate(lines) if re.match(r"_pf\d+ = d_\w+\[i\]", ln))
    assert first_shadow < lines.index("u = x[i]")


def test_partials_hoisted_into_both_arms_of_a_branch_give_the_closed_form_gradient(engine, backend):
    n = 64
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-1, 1, n), rng.uniform(0.5, 1.5, n)
    g = rng.standard_normal(n)
    out = Duplicated(backend.asarray(np.zeros(n)), backend.asarray(g.copy()))
    dx, dy = Duplicated(backend.asarray(x), backend.asarray(np.zeros(n))), \
        Duplicated(backend.asarray(y), backend.asarray(np.zeros(n)))
    kernel = _kernel("tests/kernels_schedule.py:branch_partials")
    forward, reverse = _sweeps(engine, kernel, [out, dx, dy], n)
    assert "math." not in reverse and forward.count("_pd") >= 4     # sin/y, exp*cos: both arms
    engine.launch(kernel, _cfg(n), out, dx, dy, mode="reverse")
    pos = x > 0
    want_x = np.where(pos, np.cos(x) / y, np.exp(x) * np.cos(y)) * g
    want_y = np.where(pos, -np.sin(x) / y ** 2, -np.exp(x) * np.sin(y)) * g
    np.testing.assert_allclose(backend.to_host(dx.shadow), want_x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(backend.to_host(dy.shadow), want_y, rtol=1e-12, atol=1e-14)


def test_partials_inside_a_dynamic_loop_stay_in_its_reverse_sweep(backend):
    """With the loop in the recomputed form (the Jacobian form, which evaluates the body's
    partials in the forward sweep as tangents, off: tests/engine/test_loop_jacobian.py covers it)."""
    from harness.engine.runtime.launch import Engine, EngineOptions
    engine = Engine(backend, EngineOptions(loop_jacobian_limit=0))
    n, steps = 32, 5
    rng = np.random.default_rng(4)
    x, g = rng.uniform(-1, 1, n), rng.standard_normal(n)
    out = Duplicated(backend.asarray(np.zeros(n)), backend.asarray(g.copy()))
    dx = Duplicated(backend.asarray(x), backend.asarray(np.zeros(n)))
    kernel = _kernel("tests/kernels_schedule.py:loop_partials")
    forward, reverse = _sweeps(engine, kernel, [out, dx, steps], n)
    assert "math.cos(" in reverse                 # sin's partial, per replayed iteration
    assert "math.cos(" not in forward             # nothing of the loop body hoisted
    engine.launch(kernel, _cfg(n), out, dx, steps, mode="reverse")
    a, da = x.copy(), np.ones(n)                  # forward-mode closed form of d out / d x
    for _ in range(steps):
        a, da = np.sin(a) + 0.5 * a, (np.cos(a) + 0.5) * da
    q = 1.0 + x * x
    want = g * (da / q - a * 2 * x / q ** 2)
    np.testing.assert_allclose(backend.to_host(dx.shadow), want, rtol=1e-12, atol=1e-14)
