"""`rng_states` arguments: numba's xoroshiro128p generator states in the case format (the loader's
record, its refusals naming the key) and on the host (harness/core/rng_states.py, equal to what
numba.cuda.random.create_xoroshiro128p_states makes)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.core.errors import CaseError
from harness.core.rng_states import STATE_DTYPE, STATE_DTYPE_NAME, dtype_name, numpy_dtype, seeded_states


def _write_case(tmp_path, args: str) -> Path:
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "kernels" / "k.py").write_text("def k(out, states):\n    pass\n")
    (tmp_path / "cases").mkdir(exist_ok=True)
    path = tmp_path / "cases" / "c.yaml"
    path.write_text("id: c\nkernel: kernels/k.py:k\nlaunch: {threads: 8}\nargs:\n"
                    "  out: {array: {shape: [8], dtype: float64}, activity: duplicated}\n" + args)
    return path


def _load(tmp_path, args: str):
    from harness.cases import load_case_file
    return load_case_file(_write_case(tmp_path, args), tmp_path)


def test_rng_states_is_a_const_array_of_the_record_dtype(tmp_path):
    from harness.cases.inputs import build_args
    case, = _load(tmp_path, "  states: {rng_states: {count: 8, seed: 3}}\n")
    states = case.args[1]
    assert (states.kind, states.activity, states.array.shape, states.array.dtype) == \
        ("array", "const", (8,), STATE_DTYPE_NAME)
    _, built = build_args(case.args, seed=0, root=tmp_path)
    assert built.value.dtype == STATE_DTYPE and built.value.shape == (8,)
    assert np.array_equal(built.value, seeded_states(8, 3))


def test_rng_states_keep_their_dtype_in_every_run(tmp_path):
    from harness.cases.expand import apply_dtype
    case, = _load(tmp_path, "  states: {rng_states: {count: 8}}\ndtypes: [float32, float64]\n")
    for dtype in ("float32", "float64"):
        out, states = apply_dtype(case, dtype)
        assert out.array.dtype == dtype and states.array.dtype == STATE_DTYPE_NAME


@pytest.mark.parametrize("args, message", [
    ("  states: {rng_states: {count: 8}, activity: duplicated}\n", r"args\.states\.activity.*always const"),
    ("  states: {rng_states: {count: 8}, shadow: {init: ones}}\n", r"args\.states\.shadow.*takes only"),
    ("  states: {rng_states: {count: 0}}\n", r"args\.states\.rng_states\.count"),
    ("  states: {rng_states: {count: 8, seed: -1}}\n", r"args\.states\.rng_states\.seed"),
    ("  states: {rng_states: {count: 8, sede: 1}}\n", r"args\.states\.rng_states.*sede"),
    ("  states: {rng_states: 8}\n", r"args\.states\.rng_states.*mapping such as \{count: 256, seed: 1\}"),
    ("  states: {rng_states: {count: 8}, array: {shape: [8], dtype: uint64}}\n", r"exactly one of .*rng_states"),
])
def test_bad_rng_states_are_load_errors_naming_the_key(tmp_path, args, message):
    with pytest.raises(CaseError, match=message):
        _load(tmp_path, args)


@pytest.mark.parametrize("count, seed, subsequence_start", [(1, 0, 0), (5, 1, 0), (37, 9, 3), (4, 2**64 - 1, 2)])
def test_host_states_equal_numbas(backend, count, seed, subsequence_start):
    """The states the harness builds with numpy are the ones numba's own initialisation builds
    (create_xoroshiro128p_states runs init_xoroshiro128p_states_cpu on the host, then uploads)."""
    from numba.cuda.random import init_xoroshiro128p_states_cpu, xoroshiro128p_dtype
    theirs = np.zeros(count, xoroshiro128p_dtype)
    init_xoroshiro128p_states_cpu(theirs, seed, subsequence_start)
    ours = seeded_states(count, seed, subsequence_start)
    assert ours.dtype == xoroshiro128p_dtype
    assert np.array_equal(ours, theirs)


def test_the_state_dtype_goes_by_its_name_and_back():
    assert dtype_name(STATE_DTYPE) == STATE_DTYPE_NAME and numpy_dtype(STATE_DTYPE_NAME) == STATE_DTYPE
    assert dtype_name(np.float32) == "float32" and numpy_dtype("float32") == np.float32
    other = np.dtype([("a", np.uint64), ("b", np.uint32)])
    assert dtype_name(other) != STATE_DTYPE_NAME
