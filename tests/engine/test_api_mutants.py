"""Planted bugs that only the Python API reaches: the harness checks a case's
arguments itself before the engine sees them, and a case launches each kernel with fixed scalars,
so the engine's own aliasing refusal at Engine.launch and its call-site cache across scalar
values are tested here, each check run on the unmutated engine (it holds) and under its mutant
(harness/selftest/mutants.py; it must fail). Cases reach the same seams too: the nested aliasing check
through cases/alias-nested-autodiff.yaml (two-shadows) and the cache through
cases/program-rescale-twice.yaml."""
from __future__ import annotations

import numpy as np
import pytest

from harness.core.activity import Const, Duplicated
from harness.engine.runtime.launch import Engine, LaunchConfig
from harness.core.errors import ActivityError
from harness.selftest.mutants import get_mutant

N = 16
CONFIG = LaunchConfig.threads(N, 8)


def _refuses_two_differentiable_arguments_on_one_buffer(engine, be, kernels):
    """out and x of out = a x + y on one buffer, each with a shadow of its own: no shadow overlaps
    anything, only the two differentiable primals do."""
    rng = np.random.default_rng(0)
    buf = be.asarray(rng.standard_normal(N))
    with pytest.raises(ActivityError, match=r"argument 0 \('out'\) and argument 2 \('x'\) share memory"):
        engine.launch(kernels.axpy, CONFIG, Duplicated(buf, be.asarray(np.ones(N))), Const(1.5),
                      Duplicated(buf, be.asarray(np.zeros(N))), Const(be.asarray(np.zeros(N))), mode="reverse")


def _relaunch_with_a_new_scalar_uses_it(engine, be, kernels):
    """scale(out, alpha, x) twice on the same buffers, alpha 2 then 3: out = 3 x."""
    x = np.arange(1.0, N + 1.0)
    out, xd = be.asarray(np.zeros(N)), be.asarray(x)
    for alpha in (2.0, 3.0):
        engine.launch(kernels.scale, CONFIG, out, alpha, xd, mode="primal")
    np.testing.assert_allclose(be.to_host(out), 3.0 * x, rtol=1e-14)


API_PROBES = {
    "alias-check-shadows-only": _refuses_two_differentiable_arguments_on_one_buffer,
    "launch-cache-ignores-scalars": _relaunch_with_a_new_scalar_uses_it,
}


@pytest.mark.parametrize("name", sorted(API_PROBES))
def test_api_probe_holds_on_the_engine(name, launching_backend, kernels):
    API_PROBES[name](Engine(launching_backend), launching_backend, kernels)


@pytest.mark.parametrize("name", sorted(API_PROBES))
def test_api_probe_catches_its_mutant(name, launching_backend, kernels):
    engine = Engine(launching_backend, seams=get_mutant(name).seams())
    with pytest.raises(BaseException) as info:       # pytest.raises' Failed or numpy's AssertionError
        API_PROBES[name](engine, launching_backend, kernels)
    assert info.type.__name__ in ("Failed", "AssertionError"), info.value
