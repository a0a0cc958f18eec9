"""Dynamic loops reversed through their Jacobian (engine/emission/emit_loop_jacobian.py): which loops take
the form (register-only, no load of an array with a shadow, k live-ins x m results within
loop_jacobian_limit) and which fall back to the recomputed or taped form; that the gradients
equal the recomputed form's to rounding (the same derivative, summed in another order); that a
loop past tape_size is reversed exactly; that batched adjoints share one Jacobian.

Structure is read from the generated source (Engine.prepare): a Jacobian-form loop is announced
by `# loop at line L in forward mode, direction j seeding live-in j of (...)`; a recomputed loop
keeps `_entry_*` registers; a taped loop declares `_tape_*` arrays."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from harness.core.activity import BatchDuplicated, Const, Duplicated
from harness.core.errors import UnsupportedError
from tests.conftest import ROOT

JACOBIAN = re.compile(r"# loop at line (\d+) in forward mode, direction j seeding live-in j of \(([^)]*)\)")


def _kernel(ref: str):
    from harness.cases.inputs import load_kernel
    return load_kernel(ref, ROOT)


def _engine(backend, **options):
    from harness.engine.runtime.launch import Engine, EngineOptions
    return Engine(backend, EngineOptions(**options))


def _cfg(n=32):
    from harness.engine.runtime.launch import LaunchConfig
    return LaunchConfig.threads(n, 32)


def _source(engine, ref, args, n=32) -> str:
    plan, _ = engine.prepare(_kernel(ref), _cfg(n), args, "reverse")
    return Path(plan.source_path).read_text()


def _jacobian_loops(text: str) -> dict[int, list[str]]:
    """Loop line -> its live-ins, for every loop the forward sweep runs in forward mode (a loop
    inside a replayed outer iteration is announced again: the same line, the same live-ins)."""
    return {int(line): [v.strip() for v in ins.split(",")] for line, ins in JACOBIAN.findall(text)}


def _recomputed(text: str) -> bool:
    return re.search(r"^\s*_entry_\w+ = \w+$", text, re.M) is not None


def _declares_tape(text: str) -> bool:
    return re.search(r"_tape_\w+ = cuda\.local\.array", text) is not None


def _line(ref: str, pattern: str) -> int:
    """The source line of `ref`'s function that matches `pattern` (the loop a test is about)."""
    import inspect
    fn = _kernel(ref)
    fn = getattr(fn, "py_func", fn)
    lines, first = inspect.getsourcelines(fn)
    return next(first + k for k, text in enumerate(lines) if re.search(pattern, text))


def _arr(backend, values, dtype=np.float64):
    return backend.asarray(np.asarray(values, dtype=dtype))


def _dup(backend, values, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    v = np.asarray(values, dtype=dtype)
    return Duplicated(_arr(backend, v, dtype), _arr(backend, rng.standard_normal(v.shape), dtype))


def _horner(be, n, c_dup=False, dtype=np.float64, size=24):
    rng = np.random.default_rng(1)
    c = rng.uniform(-1, 1, size)
    return [_dup(be, np.zeros(32), 2, dtype), _dup(be, rng.uniform(-1.1, 1.1, 32), 3, dtype),
            _dup(be, c, 4, dtype) if c_dup else Const(_arr(be, c, dtype)), np.int64(n)]


# name -> (kernel, loop line pattern, live-ins count k, results count m, argument builder)
ELIGIBLE = {
    "horner-n8": ("kernels/elementwise.py:horner_dynamic", r"for k in range", 1, 1, lambda be: _horner(be, 8)),
    "horner-n0": ("kernels/elementwise.py:horner_dynamic", r"for k in range", 1, 1, lambda be: _horner(be, 0)),
    "coupled-pair": ("kernels/loops.py:coupled_pair", r"for k in range", 2, 2,
                     lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                                 _dup(be, np.linspace(1, -0.5, 32), 5), Const(_arr(be, np.linspace(-1, 1, 24))), np.int64(12)]),
    "coupled-pair-n0": ("kernels/loops.py:coupled_pair", r"for k in range", 2, 2,
                        lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                                    _dup(be, np.linspace(1, -0.5, 32), 5), Const(_arr(be, np.linspace(-1, 1, 24))), np.int64(0)]),
    "last-term": ("kernels/loops.py:last_term", r"for k in range", 2, 2,
                  lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                              Const(_arr(be, np.linspace(-1, 1, 24))), np.int64(7)]),
    "unused-register": ("kernels/loops.py:unused_register", r"for k in range", 3, 2,
                        lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                                    Const(_arr(be, np.linspace(-1, 1, 24))), np.int64(7)]),
    "rotate-scale": ("kernels/loops.py:rotate_scale", r"for k in range", 1, 2,
                     lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                                 Const(_arr(be, np.linspace(-0.8, 0.8, 24))), np.int64(20)]),
    "while-exit": ("kernels/loops.py:shrink_until", r"while y > level", 2, 1,
                   lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(0.7, 3.0, 32), 3), 0.8]),
    "while-break": ("kernels/loops.py:shrink_until_break", r"while k < cap", 2, 1,
                    lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(0.7, 3.0, 32), 3), 0.8, np.int64(3)]),
    "continue": ("kernels/loops.py:skip_negative_sin_hoisted", r"for k in range", 1, 1,
                 lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                             Const(_arr(be, np.linspace(-1, 1, 24))), np.int64(20)]),
    "in-branch": ("kernels/loops.py:loop_in_branch", r"for k in range", 2, 1,
                  lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1.5, 1.5, 32), 3),
                              Const(_arr(be, np.linspace(-1, 1, 8))), np.int64(6)]),
    "nested": ("kernels/loops.py:triangular_nested", r"for j in range", 1, 1,
               lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                           Const(_arr(be, np.linspace(-1, 1, 8))), np.int64(6)]),
}


@pytest.mark.parametrize("name", sorted(ELIGIBLE))
def test_eligible_loops_take_the_jacobian_form(backend, name):
    ref, pattern, k, m, args = ELIGIBLE[name]
    text = _source(_engine(backend), ref, args(backend))
    loops = _jacobian_loops(text)
    assert list(loops) == [_line(ref, pattern)], text          # the loop (a nested one runs inside it)
    assert len(loops[_line(ref, pattern)]) == k, loops
    assert not _recomputed(text) and not _declares_tape(text) and not re.search(r"for _j\d+ in", text)
    adjoint = text.split("adjoints through its Jacobian")[1]
    assert len(re.findall(r"^\s*d_A\d+_\d+ = ", adjoint, re.M)) == m        # one saved adjoint per result
    assert len(re.findall(r"^\s*\w+ \+= (d_A\d+_\d+ \* d_J\w+( \+ )?)+$", adjoint, re.M)) == k


def test_the_live_ins_are_the_varied_entry_values_and_reads():
    """acc starts from a constant (no entry adjoint): only t; u and v start from x[i], y[i]."""
    from harness.backends import get_backend
    be = get_backend("sim")
    assert _jacobian_loops(_source(_engine(be), "kernels/elementwise.py:horner_dynamic", _horner(be, 8))) \
        == {_line("kernels/elementwise.py:horner_dynamic", r"for k in range"): ["t"]}
    ref, _, _, _, args = ELIGIBLE["coupled-pair"]
    (ins,) = _jacobian_loops(_source(_engine(be), ref, args(be))).values()
    assert [v.rsplit("_", 1)[0] for v in ins] == ["u", "v"]


def _coupled(be, y_const=False):
    ref, _, _, _, args = ELIGIBLE["coupled-pair"]
    a = args(be)
    if y_const:
        a[2] = Const(a[2].value)
    return ref, a


@pytest.mark.parametrize("ref, args, form", [
    ("kernels/elementwise.py:horner_dynamic", lambda be: _horner(be, 8, c_dup=True), "recomputed"),
    ("kernels/loops.py:first_crossing",
     lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(0.2, 1.0, 32), 3),
                 Const(_arr(be, np.linspace(0.05, 0.3, 24))), np.int64(20), 2.5], "recomputed"),
    ("kernels/loops.py:skip_negative_sin",
     lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                 Const(_arr(be, np.linspace(-1, 1, 24))), np.int64(20)], "recomputed"),
    ("kernels/loops.py:accumulate_in_place",
     lambda be: [_dup(be, np.linspace(0, 1, 32), 2), _dup(be, np.linspace(0, 1, 4), 3), np.int64(3)], "taped"),
    ("kernels/soundness.py:lane_rotate_loop",
     lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(0, 1, 32), 3), np.int64(3)], "taped"),
], ids=["c-duplicated", "reads-x-in-loop", "reads-x-in-loop-continue", "stores", "shuffles"])
def test_loops_reading_active_arrays_or_touching_memory_fall_back(backend, ref, args, form):
    text = _source(_engine(backend), ref, args(backend))
    assert not _jacobian_loops(text), text
    assert _recomputed(text) if form == "recomputed" else (_declares_tape(text) and not _recomputed(text))


@pytest.mark.parametrize("limit, jacobian", [(0, False), (3, False), (4, True), (16, True)])
def test_the_limit_bounds_live_ins_times_results(backend, limit, jacobian):
    """coupled_pair has k = m = 2: k * m = 4 takes the form at a limit of 4, not at 3; 0 is off."""
    ref, args = _coupled(backend)
    text = _source(_engine(backend, loop_jacobian_limit=limit), ref, args)
    assert bool(_jacobian_loops(text)) == jacobian
    assert _recomputed(text) != jacobian


def test_a_const_entry_value_is_not_a_live_in(backend):
    """With y Const, v's entry value carries no derivative: k = 1, m = 2, within a limit of 2."""
    ref, args = _coupled(backend, y_const=True)
    (ins,) = _jacobian_loops(_source(_engine(backend, loop_jacobian_limit=2), ref, args)).values()
    assert [v.rsplit("_", 1)[0] for v in ins] == ["u"]


def test_an_inner_loop_takes_the_form_inside_a_taped_outer_loop(backend):
    """rows_of_powers' outer loop stores, so it is taped; its inner loop's Jacobian is computed
    again in each replayed outer iteration, just before its adjoint."""
    args = [_dup(backend, np.zeros((32, 5)), 2), _dup(backend, np.linspace(-0.9, 0.9, 32), 3), np.int64(5), np.int64(4)]
    text = _source(_engine(backend), "kernels/loops.py:rows_of_powers", args)
    assert list(_jacobian_loops(text)) == [_line("kernels/loops.py:rows_of_powers", r"for k in range")]
    assert len(JACOBIAN.findall(text)) == 2                  # forward sweep and replay
    assert _declares_tape(text) and re.search(r"_tape_s_\d+\[_n\d+\] = s_\d+", text)
    assert not re.search(r"_tape_p_", text) and not _recomputed(text)


def _powers_of_scaled_args(be):
    return [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
            Const(_arr(be, np.linspace(-0.9, 0.9, 8))), np.int64(5), np.int64(4)]


def test_an_inner_loop_takes_the_form_inside_a_recomputed_outer_loop(backend):
    """The outer loop reads x[i] (recomputed); the inner one's Jacobian is computed in each
    replayed outer iteration, after the replay has rebuilt that iteration's registers."""
    ref = "kernels/loops.py:powers_of_scaled"
    text = _source(_engine(backend), ref, _powers_of_scaled_args(backend))
    assert list(_jacobian_loops(text)) == [_line(ref, r"for k in range")]
    assert {r.rsplit("_", 1)[0] for r in re.findall(r"^\s*_entry_\w+ = (\w+)$", text, re.M)} == {"s"}
    assert not _declares_tape(text)


def _reverse_state(backend, ref, args, **options) -> list[np.ndarray]:
    _engine(backend, **options).launch(_kernel(ref), _cfg(), *args, mode="reverse")
    out = []
    for a in args:
        if isinstance(a, Duplicated):
            out += [backend.to_host(a.value), backend.to_host(a.shadow)]
    return out


@pytest.mark.parametrize("name", sorted(ELIGIBLE) + ["rows-of-powers", "powers-of-scaled"])
def test_jacobian_gradients_equal_the_recomputed_ones(launching_backend, name):
    """The same derivative summed in another order (forward along the loop, then one product,
    against backwards through the replayed iterations): equal to rounding."""
    if name == "rows-of-powers":
        ref = "kernels/loops.py:rows_of_powers"
        args = lambda be: [_dup(be, np.zeros((32, 5)), 2), _dup(be, np.linspace(-0.9, 0.9, 32), 3),  # noqa: E731
                           np.int64(5), np.int64(4)]
    elif name == "powers-of-scaled":
        ref, args = "kernels/loops.py:powers_of_scaled", _powers_of_scaled_args
    else:
        ref, _, _, _, args = ELIGIBLE[name]
    recomputed = _reverse_state(launching_backend, ref, args(launching_backend), loop_jacobian_limit=0)
    jacobian = _reverse_state(launching_backend, ref, args(launching_backend))
    for a, b in zip(recomputed, jacobian):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def test_float32_registers_keep_float32_accuracy(launching_backend):
    """Tangents live in their value's type, as the adjoints of the other forms do."""
    be = launching_backend
    recomputed = _reverse_state(be, "kernels/elementwise.py:horner_dynamic", _horner(be, 20, dtype=np.float32),
                                loop_jacobian_limit=0)
    jacobian = _reverse_state(be, "kernels/elementwise.py:horner_dynamic", _horner(be, 20, dtype=np.float32))
    exact = _reverse_state(be, "kernels/elementwise.py:horner_dynamic", _horner(be, 20))
    assert jacobian[3].dtype == np.float32
    err_j = np.abs(jacobian[3] - exact[3]).max()
    err_r = np.abs(recomputed[3] - exact[3]).max()
    assert err_j <= 4 * max(err_r, np.finfo(np.float32).eps * np.abs(exact[3]).max()), (err_j, err_r)


def _horner_gradient(x, c, n, dout):
    """d/dx of acc_n(x) = sum_k c[k] x^(n-1-k), times dout (numpy, float64)."""
    powers = np.arange(n - 1, -1, -1)
    return dout * np.sum(c[:n] * powers * np.where(powers > 0, x[:, None] ** np.maximum(powers - 1, 0), 0.0), axis=1)


def test_a_loop_past_tape_size_is_reversed_exactly(launching_backend):
    """No tape, no replay: 100 iterations (tape_size 64) need nothing the form does not have,
    where the recomputed and taped forms refuse the launch."""
    be = launching_backend
    args = _horner(be, 100, size=100)
    args[1] = _dup(be, np.linspace(-0.9, 0.9, 32), 3)
    x, c = be.to_host(args[1].value).copy(), be.to_host(args[2].value).copy()
    dout, dx0 = be.to_host(args[0].shadow).copy(), be.to_host(args[1].shadow).copy()
    _engine(be).launch(_kernel("kernels/elementwise.py:horner_dynamic"), _cfg(), *args, mode="reverse")
    np.testing.assert_allclose(be.to_host(args[1].shadow), dx0 + _horner_gradient(x, c, 100, dout), rtol=1e-10, atol=1e-10)
    with pytest.raises(UnsupportedError, match=r"ran more than 64 iterations"):
        _reverse_state(be, "kernels/elementwise.py:horner_dynamic", _horner(be, 100, size=100), loop_jacobian_limit=0)


def test_batched_adjoints_share_one_jacobian(launching_backend):
    """BatchDuplicated(2): one Jacobian, two adjoint lanes, each equal to its own single run."""
    be = launching_backend
    ref, _, _, _, args = ELIGIBLE["coupled-pair"]
    rng = np.random.default_rng(9)
    lanes = [args(be), args(be)]
    for lane in lanes:                      # distinct cotangents per lane
        lane[0] = Duplicated(lane[0].value, _arr(be, rng.standard_normal(32)))

    def copy(lane):
        return [Duplicated(_arr(be, be.to_host(a.value)), _arr(be, be.to_host(a.shadow))) if isinstance(a, Duplicated)
                else a for a in lane]
    single = [_reverse_state(be, ref, copy(lane)) for lane in lanes]
    batched = [BatchDuplicated(lanes[0][j].value, (lanes[0][j].shadow, lanes[1][j].shadow)) for j in range(3)] + lanes[0][3:]
    _engine(be).launch(_kernel(ref), _cfg(), *batched, mode="reverse")
    for lane in range(2):
        for j in range(3):
            np.testing.assert_allclose(be.to_host(lanes[lane][j].shadow), single[lane][2 * j + 1], rtol=1e-13, atol=1e-13)
