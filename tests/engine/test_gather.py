"""Stencil adjoints as gathers (harness/engine/analyses/gather.py, emit_gather.py).

The gathered reverse must leave every array and shadow exactly as the scatter with atomics does
(the engine's reverse semantics, dout consumed included): each kernel below is launched twice on
copies of the same buffers, once as generated and once with the gather turned off, across offsets
(literal, runtime, d = 0), guards, nonlinear reads, grids larger and smaller than the array, a read
that wraps around, Duplicated weights and a batch. The generated text shows which form was chosen.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT

N = 40


def _kernel(name):
    from harness.cases.inputs import load_kernel
    return load_kernel(f"kernels/stencils.py:{name}", ROOT)


def _args(backend, spec, seed):
    """spec: (activity, value) per argument; arrays get a shadow of random cotangents."""
    from harness.core.activity import Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed
    rng = np.random.default_rng(seed)
    out = []
    for act, v in spec:
        if act == "int":
            out.append(v)
            continue
        if act == "active":
            out.append(Active(v))
            continue
        arr = backend.asarray(v.copy() if isinstance(v, np.ndarray) else rng.uniform(0.5, 1.5, v))
        if act == "const":
            out.append(Const(arr))
        elif act in ("dup", "noneed"):
            cls = Duplicated if act == "dup" else DuplicatedNoNeed
            out.append(cls(arr, backend.asarray(rng.standard_normal(arr.shape))))
        else:
            out.append(BatchDuplicated(arr, tuple(backend.asarray(rng.standard_normal(arr.shape)) for _ in range(2))))
    return out


def _state(backend, args) -> list:
    out = []
    for a in args:
        for buf in [getattr(a, "value", None)] + list(getattr(a, "shadows", ()) or
                                                      ([a.shadow] if getattr(a, "shadow", None) is not None else [])):
            if buf is not None and backend.is_array(buf):
                out.append(np.array(backend.to_host(buf)))
    return out


W = np.array([0.25, 0.5, -0.75])
GATHERED = [
    # (id, kernel, argument spec, launch (grid, block))
    ("conv3-d1", "conv3", [("dup", N), ("dup", N), ("const", W), ("int", 1)], (3, 16)),
    ("conv3-d2", "conv3", [("dup", N), ("dup", N), ("const", W), ("int", 2)], (3, 16)),
    ("conv3-d0", "conv3", [("dup", N), ("dup", N), ("const", W), ("int", 0)], (3, 16)),
    ("conv3-w-dup", "conv3", [("dup", N), ("dup", N), ("dup", W), ("int", 2)], (3, 16)),
    ("conv3-batch", "conv3", [("batch", N), ("batch", N), ("batch", W), ("int", 1)], (3, 16)),
    ("conv3-fewer-threads", "conv3", [("dup", N), ("dup", N), ("dup", W), ("int", 2)], (2, 8)),
    ("conv3-block-index", "conv3_block_index", [("dup", N), ("dup", N), ("dup", W), ("int", 2)], (3, 16)),
    ("conv3-literal", "conv3_literal", [("dup", N), ("dup", N), ("const", W)], (5, 8)),
    ("two-gathered-arrays", "two_stencils", [("batch", N), ("batch", N), ("batch", N)], (3, 16)),
    ("active-scalar", "scaled_neighbours", [("dup", N), ("active", 1.5), ("dup", N)], (3, 16)),
    ("output-not-needed", "conv3", [("noneed", N), ("dup", N), ("dup", W), ("int", 2)], (3, 16)),
    ("neighbour-product", "neighbour_product", [("dup", N), ("dup", N)], (3, 16)),
    ("sin-shift", "sin_shift", [("dup", N), ("dup", N + 5), ("dup", N), ("int", 3)], (3, 16)),
    ("skip-odd", "skip_odd", [("dup", N), ("dup", N), ("int", 1)], (3, 16)),
    ("wrap-left", "wrap_left", [("dup", N), ("dup", N)], (3, 16)),
    ("wrap-left-fewer-threads", "wrap_left", [("dup", N), ("dup", N)], (1, 16)),
]


def _launch(backend, engine, kernel, spec, launch, seed=5):
    from harness.engine.runtime.launch import LaunchConfig
    args = _args(backend, spec, seed)
    result = engine.launch(kernel, LaunchConfig.of(*launch), *args, mode="reverse")
    return _state(backend, args) + [np.array(v) for _, v in sorted(result.adjoints.items())]


def _gathering(backend):
    """An engine with the gather turned on (engine option gather_stencils; off by default)."""
    from harness.engine.runtime.launch import Engine, EngineOptions
    return Engine(backend, EngineOptions(gather_stencils=True))


def _source(engine, kernel, spec, launch, backend) -> str:
    from harness.engine.runtime.launch import LaunchConfig
    plan, _ = engine.prepare(kernel, LaunchConfig.of(*launch), _args(backend, spec, 0), "reverse")
    return Path(plan.source_path).read_text()


def _atomics_on(text: str, fname: str) -> list[str]:
    fdef = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == fname)
    return [ast.unparse(n.args[0]) for n in ast.walk(fdef)
            if isinstance(n, ast.Call) and ast.unparse(n.func) == "cuda.atomic.add"]


@pytest.mark.parametrize("name, kernel, spec, launch", GATHERED, ids=[g[0] for g in GATHERED])
def test_gathered_reverse_equals_the_scatter(launching_backend, name, kernel, spec, launch):
    from harness.engine.runtime.launch import Engine
    k = _kernel(kernel)
    text = _source(_gathering(launching_backend), k, spec, launch, launching_backend)
    assert "_gather_x(" in text, "the gather form is chosen"
    got = _launch(launching_backend, _gathering(launching_backend), k, spec, launch)
    scatter = Engine(launching_backend)          # the default: scatter
    assert "_gather_" not in _source(scatter, k, spec, launch, launching_backend)
    want = _launch(launching_backend, scatter, k, spec, launch)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_by_default_the_stencil_adjoint_is_scattered(backend, engine):
    spec = [("dup", N), ("dup", N), ("dup", W), ("int", 2)]
    text = _source(engine, _kernel("conv3"), spec, (3, 16), backend)
    assert "_gather_" not in text
    assert sorted(set(_atomics_on(text, "conv3__reverse"))) == ["d_uniform_spread", "d_x"]


def test_gathered_kernel_has_no_atomics_on_the_gathered_shadow(backend):
    spec = [("dup", N), ("dup", N), ("dup", W), ("int", 2)]
    text = _source(_gathering(backend), _kernel("conv3"), spec, (3, 16), backend)
    assert _atomics_on(text, "conv3__reverse") == ["d_uniform_spread"] * 3, "only the weights' block sums"
    assert "gathered adjoints: x" in text
    # the stored cotangent is read by the readers' replays and zeroed by the consume kernel only
    kernel = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "conv3__reverse")
    assert "d_out[l] = 0" not in ast.unparse(kernel)
    consume = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "conv3__reverse_consume")
    assert "d_out[l] = 0" in ast.unparse(consume)


INELIGIBLE = [
    # (id, kernel, argument spec, launch, why)
    ("array-read-and-written", "scale_in_place_by_neighbours", [("dup", N), ("dup", N)], (3, 16)),
    ("data-dependent-offset", "gather_by_index", [("dup", N), ("dup", N + 4), ("int-array", None)], (3, 16)),
    ("one-thread", "conv3", [("dup", N), ("dup", N), ("const", W), ("int", 1)], (1, 1)),
]


@pytest.mark.parametrize("name, kernel, spec, launch", INELIGIBLE, ids=[g[0] for g in INELIGIBLE])
def test_ineligible_kernels_keep_the_scatter(backend, name, kernel, spec, launch):
    from harness.core.activity import Const
    spec = [s if s[0] != "int-array" else ("int", None) for s in spec]
    args = _args(backend, spec, 0)
    if name == "data-dependent-offset":
        args[2] = Const(backend.asarray(np.arange(N) % 3))
    from harness.engine.runtime.launch import LaunchConfig
    plan, _ = _gathering(backend).prepare(_kernel(kernel), LaunchConfig.of(*launch), args, "reverse")
    text = Path(plan.source_path).read_text()
    assert "_gather_" not in text and plan.consume is None
    if launch != (1, 1):
        assert "d_x" in _atomics_on(text, f"{kernel}__reverse")


@pytest.mark.parametrize("kernel, kinds, dims", [
    ("stencil3", {"out": ("array", 1), "x": ("array", 1)}, (0,)),
    ("stencil3", {"out": ("array", 1), "x": ("array", 1)}, (0, 1)),          # a 2-D launch
    ("thread_index_only", {"out": ("array", 1), "x": ("array", 1)}, (0,)),   # threadIdx, not cuda.grid
])
def test_eligibility(kernels, kernel, kinds, dims):
    from harness.engine.analyses.activity import analyze
    from harness.engine.emission.emit_state import differentiable_arrays
    from harness.engine.analyses.gather import gathered_arrays
    from harness.engine.analyses.ownership import LaunchShape
    from tests.engine.test_transform import _lower
    ir = _lower(getattr(kernels, kernel), **kinds)
    activity = {p.name: "duplicated" for p in ir.params}
    shape = LaunchShape(dims, dims)
    info = analyze(ir, activity, shape, "reverse")
    got = gathered_arrays(ir, info.activity, differentiable_arrays(ir, info.activity), info.owned, shape)
    expected = ["x"] if (kernel, dims) == ("stencil3", (0,)) else []
    assert list(got) == expected


OFFSETS = ["- 2", "- 1", "", "+ 1", "+ 2", "+ d", "- d", "+ 2 * d", "- d - 1"]
EXPRS = ["a * b + c", "math.sin(a) * b + c * c", "a * a - b * c", "math.exp(0.1 * a) * (b + c)", "a + b + c"]
GUARDS = ["", " and l % 3 != 1", " and x[l] > -0.5"]


def _random_stencil(rng) -> str:
    o1, o2, o3 = (OFFSETS[k] for k in rng.integers(0, len(OFFSETS), 3))
    branch = rng.random() < 0.5
    body = (f"        v = {EXPRS[rng.integers(0, len(EXPRS))]}\n"
            + ("        if v > 0.0:\n            out[l] = v * b\n        else:\n            out[l] = v\n" if branch
               else "        out[l] = v\n"))
    return ("import math\n\nfrom numba import cuda\n\n\n"
            "def kernel(out, x, y, d):\n"
            "    l = cuda.grid(1)\n"
            f"    if l >= 5 and l < x.shape[0] - 5{GUARDS[rng.integers(0, len(GUARDS))]}:\n"
            f"        a = x[l {o1}]\n        b = x[l {o2}]\n        c = x[l {o3}] * y[l]\n" + body)


@pytest.mark.parametrize("seed", range(40))
def test_random_stencils_equal_the_scatter(launching_backend, tmp_path, seed):
    """Seeded random stencils (offsets literal, runtime and coinciding, nonlinear reads, branches on
    values, guards that skip threads, various grids): the gathered reverse equals the scatter."""
    import importlib.util

    from harness.engine.runtime.launch import Engine
    rng = np.random.default_rng(seed)
    path = tmp_path / f"stencil_{seed}.py"
    path.write_text(_random_stencil(rng))
    spec_ = importlib.util.spec_from_file_location(f"harness_random_stencil_{seed}", path)
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    spec = [("dup", N), ("dup", N), ("dup", N), ("int", int(rng.integers(0, 3)))]
    launch = [(3, 16), (1, 16), (5, 8)][seed % 3]
    text = _source(_gathering(launching_backend), module.kernel, spec, launch, launching_backend)
    got = _launch(launching_backend, _gathering(launching_backend), module.kernel, spec, launch, seed)
    want = _launch(launching_backend, Engine(launching_backend), module.kernel, spec, launch, seed)
    offsets = {o.strip() for o in re.findall(r"x\[l([^\]]*)\]", path.read_text())}
    owned = len(offsets) == 1                 # one offset: x is owned, its adjoint needs no gather
    assert ("_gather_x(" in text) != owned, path.read_text()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=path.read_text())
