"""Block coarsening of reverse kernels that end in a reduction (harness/engine/emission/coarsen.py).

The coarsened reverse must leave every array, shadow and Active adjoint as the one-block-per-block
reverse does (up to the order of the floating-point sums): each kernel below is launched twice on
copies of the same buffers, coarsened (the default) and with engine option coarsen_blocks_per_sm = 0,
on grids larger than the simulator's two physical blocks. The generated text shows which form was
chosen, and the bound launch's grid shows the cap.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.engine.test_gather import _args, _state

C4 = np.array([0.5, -1.0, 0.25, 2.0])
C5 = np.array([0.5, -1.0, 0.25, 2.0, -0.75])
W2 = np.array([0.75, -1.5])

COARSENED = [
    # (id, kernels/<file>:<function>, argument spec, launch (grid, block))
    ("ragged-early-return", "reductions.py:ragged_horner", [("dup", 200), ("dup", 200), ("dup", C4), ("int", 190)], (7, 32)),
    ("active-scale", "reductions.py:scaled_quintic", [("dup", 300), ("dup", 300), ("dup", C5), ("active", 1.25)], (10, 32)),
    ("partial-warps", "reductions.py:scaled_quintic", [("dup", 175), ("dup", 175), ("dup", C5), ("active", 1.25)], (5, 35)),
    ("batch", "reductions.py:scaled_quintic", [("batch", 300), ("batch", 300), ("batch", C5), ("active", 1.25)], (10, 32)),
    ("grid-2d", "reductions.py:weighted_2d", [("dup", (20, 10)), ("dup", (20, 10)), ("dup", W2)], ((3, 3), (8, 4))),
    ("grid-3d", "reductions.py:weighted_3d", [("dup", (6, 5, 3)), ("dup", (6, 5, 3)), ("dup", W2)], ((2, 3, 2), (4, 2, 2))),
    ("grid-stride", "reductions.py:grid_stride_weights", [("dup", 200), ("dup", 200), ("dup", W2)], (6, 8)),
    ("shared-barrier", "reductions.py:shared_weighted_neighbours", [("dup", 150), ("dup", 150), ("dup", W2)], (5, 32)),
    ("one-block", "reductions.py:ragged_horner", [("dup", 20), ("dup", 20), ("dup", C4), ("int", 20)], (1, 32)),
]


def _kernel(ref):
    from harness.cases.inputs import load_kernel
    return load_kernel(f"kernels/{ref}", ROOT)


def _engine(backend, blocks_per_sm=None):
    from harness.engine.runtime.launch import Engine, EngineOptions
    return Engine(backend, None if blocks_per_sm is None else EngineOptions(coarsen_blocks_per_sm=blocks_per_sm))


def _config(launch):
    from harness.engine.runtime.launch import LaunchConfig
    return LaunchConfig.of(*launch)


def _run(backend, engine, kernel, spec, launch, seed=3) -> list:
    args = _args(backend, spec, seed)
    result = engine.launch(kernel, _config(launch), *args, mode="reverse")
    return _state(backend, args) + [np.array(v) for _, v in sorted(result.adjoints.items())]


def _plan(backend, engine, kernel, spec, launch):
    plan, _ = engine.prepare(kernel, _config(launch), _args(backend, spec, 0), "reverse")
    return plan, Path(plan.source_path).read_text()


@pytest.mark.parametrize("name, ref, spec, launch", COARSENED, ids=[c[0] for c in COARSENED])
def test_coarsened_reverse_equals_one_block_per_block(launching_backend, name, ref, spec, launch):
    k = _kernel(ref)
    plan, text = _plan(launching_backend, _engine(launching_backend), k, spec, launch)
    assert plan.coarsen == 32 and "for _vb in range(cuda.blockIdx.x, _vgx * _vgy * _vgz, cuda.gridDim.x):" in text
    plain, plain_text = _plan(launching_backend, _engine(launching_backend, 0), k, spec, launch)
    assert plain.coarsen == 0 and "_vb" not in plain_text
    got = _run(launching_backend, _engine(launching_backend), k, spec, launch)
    want = _run(launching_backend, _engine(launching_backend, 0), k, spec, launch)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


REFUSED = [
    # (id, kernel, argument spec, launch, engine options); test_refusal_reasons checks the reasons
    ("shuffle", "reductions.py:warp_weighted_sum", [("dup", 1), ("dup", 128), ("dup", np.array([0.5]))], (4, 32), {}),
    ("no-reduction", "elementwise.py:axpy", [("dup", 64), ("int", 1.5), ("dup", 64), ("dup", 64)], (2, 32), {}),  # a: Const
    ("gathered", "stencils.py:conv3", [("dup", 40), ("dup", 40), ("dup", np.array([0.25, 0.5, -0.75])), ("int", 1)],
     (3, 16), {"gather_stencils": True}),
    ("option-off", "reductions.py:ragged_horner", [("dup", 200), ("dup", 200), ("dup", C4), ("int", 190)], (7, 32),
     {"coarsen_blocks_per_sm": 0}),
]


def _options(**kw):
    from harness.engine.runtime.launch import EngineOptions
    return EngineOptions(**kw)


@pytest.mark.parametrize("name, ref, spec, launch, options", REFUSED, ids=[r[0] for r in REFUSED])
def test_not_coarsened_where_not_proven(launching_backend, name, ref, spec, launch, options):
    from harness.engine.runtime.launch import Engine
    k = _kernel(ref)
    plan, text = _plan(launching_backend, Engine(launching_backend, _options(**options)), k, spec, launch)
    assert plan.coarsen == 0 and "_vb" not in text and "block-coarsened" not in text
    args = _args(launching_backend, spec, 0)
    bound = Engine(launching_backend, _options(**options)).bind(k, _config(launch), *args, mode="reverse")
    assert bound.grid == _config(launch).grid, "the real grid, one physical block per block"


def test_refusal_reasons():
    """coarsen.refusal names why, on the IR of each refused kernel."""
    from harness.engine.emission import coarsen
    from harness.engine.frontend.source import parse_kernel, python_function
    from harness.engine.ir.ssa import Param
    from harness.engine.frontend.normalize import lower_kernel

    def ir_of(fn, params):
        return lower_kernel(parse_kernel(python_function(fn)), params)

    k = _kernel("reductions.py:warp_weighted_sum")
    params = [Param("out", "array", "float64", 1), Param("x", "array", "float64", 1), Param("w", "array", "float64", 1)]
    dup = {"out": "duplicated", "x": "duplicated", "w": "duplicated"}
    assert coarsen.refusal(ir_of(k, params), dup, {"x"}, {}, "reverse") == "warp shuffles"
    assert coarsen.refusal(ir_of(k, params), dup, {"x"}, {}, "forward") == "only reverse kernels end in a reduction"
    h = _kernel("reductions.py:ragged_horner")
    hp = [Param("out", "array", "float64", 1), Param("x", "array", "float64", 1), Param("c", "array", "float64", 1),
          Param("n", "scalar", "int32")]
    hact = {"out": "duplicated", "x": "duplicated", "c": "duplicated", "n": "const"}
    assert coarsen.refusal(ir_of(h, hp), hact, {"out", "x"}, {}, "reverse") is None
    assert coarsen.refusal(ir_of(h, hp), {**hact, "c": "const"}, {"out", "x"}, {}, "reverse") == "no end-of-kernel reduction"
    assert coarsen.refusal(ir_of(h, hp), hact, {"out", "x"}, {"x": ()}, "reverse").startswith("gathered adjoints")


def test_the_cap_bounds_the_physical_grid(launching_backend):
    """On the simulator two physical blocks; on a device what fits at once, at most blocks_per_sm
    times its multiprocessors."""
    from harness.engine.emission import coarsen
    k = _kernel("reductions.py:ragged_horner")
    for blocks, physical in ((7, 2), (2, 2), (1, 1)):
        spec = [("dup", 32 * blocks), ("dup", 32 * blocks), ("dup", C4), ("int", 32 * blocks)]
        bound = _engine(launching_backend).bind(k, _config((blocks, 32)), *_args(launching_backend, spec, 0), mode="reverse")
        sms = launching_backend.multiprocessors()
        if sms is None:
            assert bound.grid == (physical,)
        else:
            resident = launching_backend.resident_blocks(bound.plan.compiled, (32,))
            assert bound.grid == (min(blocks, 32 * sms, resident or blocks),)

    class Device:
        def __init__(self, sms, resident=None):
            self.sms, self.resident = sms, resident

        def multiprocessors(self):
            return self.sms

        def resident_blocks(self, compiled, block):
            assert block == (256,)
            return self.resident

    big = 262_144
    assert coarsen.physical_blocks(Device(132), big, 8) == 1056
    assert coarsen.physical_blocks(Device(132), 500, 8) == 500
    assert coarsen.physical_blocks(Device(132), big, 2) == 264
    assert coarsen.physical_blocks(Device(132, 792), big, 32, "kernel", (256,)) == 792, "one wave: what fits at once"
    assert coarsen.physical_blocks(Device(132, 792), big, 2, "kernel", (256,)) == 264
    assert coarsen.physical_blocks(Device(132), big, 32, "kernel", (256,)) == 4224, "occupancy unknown: the cap"
    assert coarsen.physical_blocks(Device(None), big, 8) == coarsen.SIM_BLOCKS


def test_launches_go_to_the_physical_grid_with_the_real_grid_as_arguments(launching_backend, monkeypatch):
    """What the backend is asked to launch: the reverse on the capped grid with the real grid's
    dimensions appended, the finish kernel on one warp with the same arguments."""
    calls = []
    real = launching_backend.prepare_launch

    def recording(compiled, grid, block, args):
        calls.append((tuple(grid), tuple(block), list(args[-3:])))
        return real(compiled, grid, block, args)
    monkeypatch.setattr(launching_backend, "prepare_launch", recording)
    k = _kernel("reductions.py:weighted_2d")
    spec = [("dup", (20, 10)), ("dup", (20, 10)), ("dup", W2)]
    _engine(launching_backend).launch(k, _config(((3, 3), (8, 4))), *_args(launching_backend, spec, 0), mode="reverse")
    assert calls[0][0] == (2,) and calls[0][1] == (8, 4) and calls[0][2] == [3, 3, 1]
    assert calls[1][0] == (1,) and calls[1][2] == [3, 3, 1]


@pytest.mark.parametrize("launch, lines", [
    ((7, 32), ["_vbx = _vb", "_vby = 0", "_vbz = 0"]),
    (((3, 3), (8, 4)), ["_vbx = _vb % _vgx", "_vby = _vb // _vgx", "_vbz = 0"]),
    (((2, 3, 2), (4, 2, 2)), ["_vbx = _vb % _vgx", "_vby = _vb // _vgx % _vgy", "_vbz = _vb // (_vgx * _vgy)"]),
], ids=["1d", "2d", "3d"])
def test_the_virtual_block_id_is_decomposed_only_into_the_axes_the_launch_has(backend, launch, lines):
    """A 1-D launch divides nothing per virtual block (64-bit division is slow on a GPU)."""
    ndim = len(launch[0]) if isinstance(launch[0], tuple) else 1
    kernel = {1: "reductions.py:ragged_horner", 2: "reductions.py:weighted_2d", 3: "reductions.py:weighted_3d"}[ndim]
    shape = {1: 224, 2: (20, 10), 3: (6, 5, 3)}[ndim]
    spec = [("dup", shape), ("dup", shape), ("dup", C4 if ndim == 1 else W2)] + ([("int", 200)] if ndim == 1 else [])
    _, text = _plan(backend, _engine(backend), _kernel(kernel), spec, launch)
    body = [s.strip() for s in text.splitlines()]
    start = body.index("for _vb in range(cuda.blockIdx.x, _vgx * _vgy * _vgz, cuda.gridDim.x):")
    assert body[start + 1:start + 4] == lines
