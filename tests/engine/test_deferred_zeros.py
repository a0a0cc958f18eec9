"""A store's zeroing of a plainly updated shadow element folded into a later add at the same index
(emission/emit_deferred_zeros.py), and the proof it relies on to pass other accesses of the array
(ordering.apart_in_thread). Gradients are judged by the case suite (cases/inplace-shadows.yaml,
cases/barrier-uniform-loops.yaml, cases/shared-block-sum.yaml); the mutation self-test's
`fold-past-aliasing` shows that the proof is what keeps them right."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from numba import cuda, float64

from harness.core.activity import Duplicated
from harness.engine.analyses.ordering import apart_in_thread
from harness.engine.frontend.normalize import lower_kernel
from harness.engine.frontend.source import parse_kernel, python_function
from harness.engine.ir.ssa import Assign, Load, Param, Store, walk
from kernels import inplace_shadows
from tests.conftest import ROOT


def _ir(fn):
    fn = python_function(fn)
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    params = [Param(n, "scalar", "int64") if n == "m" else Param(n, "array", "float64", 1) for n in names]
    return lower_kernel(parse_kernel(fn), params)


def _apart_indices(fn, array: str) -> set:
    """Pairs of index texts of `array`'s accesses proven apart (a store's and a read's, or two reads')."""
    from harness.engine.emission.syntax import index_text
    ir = _ir(fn)
    index = {}
    for s in walk(ir.body):
        if isinstance(s, Store) and s.array == array:
            index[id(s)] = "store " + index_text(s.index)
        elif isinstance(s, Assign) and isinstance(s.expr, Load) and s.expr.array == array:
            index[id(s)] = "read " + index_text(s.expr.index)
    return {frozenset(index[i] for i in pair) for pair in apart_in_thread(ir, array)}, index


def neighbours(out, x):
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    sh[t] = x[t]
    cuda.syncthreads()
    out[t] = sh[t] * sh[t + 1]


def unbounded_offset(out, x, m):
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    sh[t] = x[t]
    cuda.syncthreads()
    out[t] = sh[t] * sh[t + m]        # m may be 0: the same element


def wrapped_index(out, x):
    sh = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    sh[t] = x[t]
    cuda.syncthreads()
    out[t] = sh[t] * sh[t - 64]       # wraps around onto sh[t] itself


def test_a_tree_levels_two_elements_are_apart():
    """sh[t] and sh[t + s] under the loop's condition s > 0 (and sh[0] against sh[t + s], t >= 0)."""
    pairs, _ = _apart_indices(inplace_shadows.tree_scaled_levels, "sh")
    assert pairs == {frozenset({"store t", "read _t12"}), frozenset({"store t", "read _t14"}),
                     frozenset({"read t", "read _t12"}), frozenset({"read t", "read _t14"}),
                     frozenset({"read 0", "read _t12"}), frozenset({"read 0", "read _t14"})}


def test_a_constant_offset_is_apart_an_unknown_or_wrapping_one_is_not():
    assert _apart_indices(neighbours, "sh")[0] == {frozenset({"store t", "read _t4"}),
                                                   frozenset({"read t", "read _t4"})}
    assert _apart_indices(unbounded_offset, "sh")[0] == set()
    assert _apart_indices(wrapped_index, "sh")[0] == set()


def test_the_same_element_through_another_name_is_not_apart():
    assert _apart_indices(inplace_shadows.shared_two_spellings, "sh")[0] == set()


def _reverse_source(backend, name: str, arrays: dict) -> str:
    from harness.cases.inputs import load_kernel
    from harness.engine.runtime.launch import Engine, LaunchConfig
    kernel = load_kernel(f"kernels/inplace_shadows.py:{name}", ROOT)
    rng = np.random.default_rng(0)
    args = [Duplicated(backend.asarray(rng.standard_normal(n)), backend.asarray(rng.standard_normal(n)))
            for n in arrays.values()]
    plan, _ = Engine(backend).prepare(kernel, LaunchConfig.of(2, 64), args, "reverse")
    return Path(plan.source_path).read_text()


def test_a_tree_levels_zeroing_is_folded_into_the_kept_elements_add(backend):
    text = _reverse_source(backend, "tree_scaled_levels", {"out": 2, "x": 100})
    level = text[text.index("# line 24 (mirrored)"):text.index("# line 19 (mirrored)")]
    assert re.search(r"^\s+d_sh\[t\] = d__t\d+$", level, re.M)
    assert "d_sh[t] = 0" not in level and "d_sh[t] +=" not in level
    # the other element's add is still an add
    assert re.search(r"^\s+d_sh\[_t\d+\] \+= d__t\d+$", level, re.M)


def test_an_access_not_proven_apart_keeps_the_zeroing_in_place(backend):
    text = _reverse_source(backend, "shared_two_spellings", {"out": 100, "x": 100})
    run = text[text.index("# line 63 (mirrored)"):text.index("# line 59 (mirrored)")]
    zero, other, own = run.index("d_sh[t] = 0"), run.index("d_sh[u] += "), run.index("d_sh[t] += ")
    assert zero < other < own
