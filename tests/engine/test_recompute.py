"""Dynamic loops whose reverse sweep recomputes iterations instead of taping them (emit_loops.py):
which loops are recomputed, that the gradients equal the taped ones bit for bit (the replay runs
the same statements on the same values; only sums that threads add atomically in whatever order
they arrive are compared to rounding), and that the tape's overflow channel is unchanged.

Structure is read from the generated source the way a launch produces it (Engine.prepare): a
recomputed loop keeps its entry registers in `_entry_*` and replays earlier iterations in a
`for _jN in range(...)` loop; a taped loop writes `_tape_*` arrays."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from harness.core.activity import Const, Duplicated
from harness.core.errors import UnsupportedError
from tests.conftest import ROOT


def _kernel(ref: str):
    from harness.cases.inputs import load_kernel
    return load_kernel(ref, ROOT)


def _engine(backend, **options):
    """An engine with the Jacobian form off (tests/engine/test_loop_jacobian.py covers it), so these
    register-only loops take the recomputed or taped form this file is about."""
    from harness.engine.runtime.launch import Engine, EngineOptions
    return Engine(backend, EngineOptions(**{"loop_jacobian_limit": 0, **options}))


def _cfg(n=32):
    from harness.engine.runtime.launch import LaunchConfig
    return LaunchConfig.threads(n, 32)


def _source(engine, kernel, args, n=32) -> str:
    plan, _ = engine.prepare(kernel, _cfg(n), args, "reverse")
    return Path(plan.source_path).read_text()


def _entry_registers(text: str) -> set[str]:
    """Registers a recomputed loop copies at its entry (`_entry_acc_1 = acc_1` -> acc_1)."""
    return set(re.findall(r"^\s*_entry_\w+ = (\w+)$", text, re.M))


def _taped_registers(text: str) -> set[str]:
    """Registers taped from the first iteration on (not only past recompute_limit)."""
    return set(re.findall(r"^\s*if _n\d+ < \d+:\n\s*_tape_\w+\[\w+\] = (\w+)$", text, re.M))


def _declares_tape(text: str) -> bool:
    return re.search(r"_tape_\w+ = cuda\.local\.array", text) is not None


def _arr(backend, values):
    return backend.asarray(np.asarray(values, dtype=np.float64))


def _dup(backend, values, seed):
    rng = np.random.default_rng(seed)
    v = np.asarray(values, dtype=np.float64)
    return Duplicated(_arr(backend, v), _arr(backend, rng.standard_normal(v.shape)))


# (kernel, argument builder) of register-only loops; every builder draws the same values per seed
def _horner(be, n, c_dup=False):
    rng = np.random.default_rng(1)
    c = rng.uniform(-1, 1, 24)
    return [_dup(be, np.zeros(32), 2), _dup(be, rng.uniform(-1.1, 1.1, 32), 3),
            _dup(be, c, 4) if c_dup else Const(_arr(be, c)), np.int64(n)]


REGISTER_ONLY = {
    "horner-n0": ("kernels/elementwise.py:horner_dynamic", lambda be: _horner(be, 0)),
    "horner-n1": ("kernels/elementwise.py:horner_dynamic", lambda be: _horner(be, 1)),
    "horner-n8": ("kernels/elementwise.py:horner_dynamic", lambda be: _horner(be, 8)),
    "horner-n20-c-duplicated": ("kernels/elementwise.py:horner_dynamic", lambda be: _horner(be, 20, True)),
    "while-exit": ("kernels/loops.py:shrink_until",
                   lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(0.7, 3.0, 32), 3), 0.8]),
    "while-break": ("kernels/loops.py:shrink_until_break",
                    lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(0.7, 3.0, 32), 3), 0.8, np.int64(3)]),
    "break-n20": ("kernels/loops.py:first_crossing",
                  lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(0.2, 1.0, 32), 3),
                              _dup(be, np.linspace(0.05, 0.3, 24), 4), np.int64(20), 2.5]),
    "continue": ("kernels/loops.py:skip_negative_sin",
                 lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                             _dup(be, np.linspace(-1, 1, 24), 4), np.int64(20)]),
    "two-registers": ("kernels/loops.py:rotate_scale",
                      lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                                  _dup(be, np.linspace(-0.8, 0.8, 24), 4), np.int64(20)]),
    "in-branch": ("kernels/loops.py:loop_in_branch",
                  lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1.5, 1.5, 32), 3),
                              _dup(be, np.linspace(-1, 1, 8), 4), np.int64(6)]),
    "nested": ("kernels/loops.py:triangular_nested",
               lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(-1, 1, 32), 3),
                           _dup(be, np.linspace(-1, 1, 8), 4), np.int64(6)]),
}


@pytest.mark.parametrize("name", sorted(REGISTER_ONLY))
def test_register_only_loops_are_recomputed(backend, name):
    ref, args = REGISTER_ONLY[name]
    text = _source(_engine(backend, recompute_limit=16), _kernel(ref), args(backend))
    assert _entry_registers(text), "no entry registers kept: the loop is not recomputed"
    assert re.search(r"for _j\d+ in range\(", text), "no replay of the earlier iterations"
    assert not _taped_registers(text)          # below the limit only the overflow check
    assert re.search(r"elif _n\d+ >= 16:", text), "iterations past recompute_limit are not taped"


@pytest.mark.parametrize("name", sorted(REGISTER_ONLY))
def test_by_default_a_register_only_loop_declares_no_tape(backend, name):
    """The default recompute_limit equals the default tape_size: every iteration the reverse
    sweep can replay is recomputed, and no local-memory tape is declared."""
    ref, args = REGISTER_ONLY[name]
    text = _source(_engine(backend), _kernel(ref), args(backend))
    assert _entry_registers(text) and not _declares_tape(text), text


def test_nested_register_only_loops_are_both_recomputed(backend):
    ref, args = REGISTER_ONLY["nested"]
    text = _source(_engine(backend), _kernel(ref), args(backend))
    assert {r.rsplit("_", 1)[0] for r in _entry_registers(text)} == {"acc", "inner"}


def test_a_limit_covering_the_tape_declares_no_tape(backend):
    ref, args = REGISTER_ONLY["horner-n8"]
    text = _source(_engine(backend, recompute_limit=64), _kernel(ref), args(backend))
    assert not _declares_tape(text) and not re.search(r"\b_tape_\w+\[", text)
    assert "tape_overflow[0] =" in text              # a longer loop is still reported


def test_recompute_limit_zero_tapes_every_loop(backend):
    ref, args = REGISTER_ONLY["nested"]
    text = _source(_engine(backend, recompute_limit=0), _kernel(ref), args(backend))
    assert not _entry_registers(text) and "_j" not in text
    # both loops are taped, each with the registers its replay reads: `inner` (a factor of the
    # product inner * t); `acc` only enters acc * 0.5, whose partial is the constant, so it is
    # neither taped nor restored (emission/replay_needs.py)
    assert {r.rsplit("_", 1)[0] for r in _taped_registers(text)} == {"inner"}
    assert not re.search(r"_tape_acc\w* = ", text)


def _grid_stride_args(be):
    return [_dup(be, np.linspace(-1, 1, 100), 2), _dup(be, np.zeros(100), 3)]


def _ticket_args(be):
    return [Duplicated(_arr(be, np.zeros(8)), _arr(be, np.ones(8))), Duplicated(_arr(be, np.ones(8)), _arr(be, np.zeros(8))),
            Const(be.asarray(np.arange(8, dtype=np.int64))), Const(np.int64(3))]


@pytest.mark.parametrize("ref, args, why", [
    ("kernels/loops.py:accumulate_in_place",
     lambda be: [_dup(be, np.linspace(0, 1, 32), 2), _dup(be, np.linspace(0, 1, 4), 3), np.int64(3)],
     "loads an array the kernel writes"),
    ("kernels/grid_stride.py:grid_stride", _grid_stride_args, "stores"),
    ("kernels/soundness.py:weight_by_ticket", _ticket_args, "uses an atomic's old value"),
    ("kernels/soundness.py:lane_rotate_loop",
     lambda be: [_dup(be, np.zeros(32), 2), _dup(be, np.linspace(0, 1, 32), 3), np.int64(3)], "shuffles"),
], ids=["reads-written-array", "stores", "atomic", "shuffle"])
def test_loops_that_touch_memory_or_other_lanes_are_taped(backend, ref, args, why):
    n = 100 if "grid_stride" in ref else (8 if "ticket" in ref else 32)
    text = _source(_engine(backend), _kernel(ref), args(backend), n=n)
    assert not _entry_registers(text), f"a loop that {why} was recomputed"
    assert _taped_registers(text) and _declares_tape(text)


def test_a_storing_outer_loop_is_taped_around_a_recomputed_inner_loop(backend):
    args = [_dup(backend, np.zeros((32, 5)), 2), _dup(backend, np.linspace(-0.9, 0.9, 32), 3), np.int64(5), np.int64(4)]
    text = _source(_engine(backend), _kernel("kernels/loops.py:rows_of_powers"), args)
    assert {r.rsplit("_", 1)[0] for r in _entry_registers(text)} == {"p"}
    assert {r.rsplit("_", 1)[0] for r in _taped_registers(text)} == {"s"}


def _reverse_state(backend, ref, args, **options) -> list[tuple[bool, np.ndarray]]:
    """(shared, array) of every value and shadow after a reverse launch; `shared`: a shadow all
    threads add into with atomics (a coefficient array), whose float sum depends on the order the
    threads arrive in (the simulator's thread scheduling), so it is compared to rounding only."""
    engine = _engine(backend, **options)
    engine.launch(_kernel(ref), _cfg(), *args, mode="reverse")
    out = []
    for a in args:
        if isinstance(a, Duplicated):
            shadow = backend.to_host(a.shadow)
            out += [(False, backend.to_host(a.value)), (shadow.shape[0] != 32, shadow)]
    return out


@pytest.mark.parametrize("name", sorted(REGISTER_ONLY))
def test_recomputed_gradients_equal_the_taped_ones_bit_for_bit(launching_backend, name):
    ref, args = REGISTER_ONLY[name]
    taped = _reverse_state(launching_backend, ref, args(launching_backend), recompute_limit=0)
    for limit in (16, 64):                   # below the tape's size (both forms) and covering it
        mine = _reverse_state(launching_backend, ref, args(launching_backend), recompute_limit=limit)
        for (shared, a), (_, b) in zip(taped, mine):
            if shared:
                np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=f"recompute_limit={limit}")
            else:
                np.testing.assert_array_equal(b, a, err_msg=f"recompute_limit={limit}")


@pytest.mark.parametrize("limit", [0, 16, 64, 100])
def test_tape_overflow_is_reported_for_every_form(launching_backend, limit):
    """The reverse sweep walks min(n, tape_size) iterations in every form, so a longer loop is
    refused at its line whether its iterations would be recomputed or taped."""
    with pytest.raises(UnsupportedError, match=r"loop at line \d+ ran more than 64 iterations"):
        _reverse_state(launching_backend, "kernels/elementwise.py:horner_dynamic",
                       _horner(launching_backend, 0)[:2] + [Const(_arr(launching_backend, np.ones(70))), np.int64(70)],
                       recompute_limit=limit)
