"""The engine interface (harness/adapters): selection, run identity, per-engine expectations, and the
translation of numba.cuda kernels for the Warp and Taichi adapters.

The translation tests need neither Warp nor Taichi (the targets only write text); the launch tests
run only where the `engines` extra is installed.
"""
from __future__ import annotations

import ast
import importlib.util
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from harness.adapters import ENGINES, parse_engines
from harness.adapters.expectations import expectation_for, judge_engine_refusal
from harness.adapters.taichi_adapter import TaichiTarget
from harness.adapters.translate import F32, F64, INT, Arr, LaunchInfo, Param, Translator, lift_early_returns
from harness.adapters.warp_adapter import WarpTarget
from harness.core.errors import UnsupportedError
from harness.model import Case, Expectation, KernelRef, Outcome, Run

ROOT = Path(__file__).resolve().parents[2]


def _case(**kw) -> Case:
    return Case(id="c", source="cases/c.yaml", kernel=KernelRef("kernels/x.py", "k"), args=(), **kw)


# ----------------------------------------------------------------------------- selection and identity

def test_parse_engines_default_list_and_unknown_name():
    assert parse_engines(None) == ["bundled"]
    assert parse_engines("bundled, warp,taichi,warp") == ["bundled", "warp", "taichi"]
    with pytest.raises(ValueError, match="unknown engine jax: choose from bundled, warp, taichi"):
        parse_engines("warp,jax")
    assert ENGINES == ("bundled", "warp", "taichi")


def test_run_ids_distinguish_engines_and_records_carry_the_engine():
    case = _case()
    bundled = Run(case, "reverse", "float32", "sim")
    warp = Run(case, "reverse", "float32", "sim", engine="warp")
    assert bundled.run_id == "cases/c.yaml::reverse-float32"          # unchanged for the bundled engine
    assert warp.run_id == "cases/c.yaml::reverse-float32@warp"
    out = Outcome(run_id=warp.run_id, case_id="c", source=case.source, variant=None, mode="reverse",
                  dtype="float32", backend="sim", state="PASS", engine="warp", engine_version="1.19.0")
    record = out.to_json()
    assert record["engine"] == "warp" and record["engine_version"] == "1.19.0"
    assert Outcome.from_json({k: v for k, v in record.items() if k not in ("engine", "engine_version")}).engine == "bundled"


# ----------------------------------------------------------------------------- expectations

def test_expectations_per_engine():
    xfail = Expectation(kind="xfail", reason="Warp issue 947", link="https://github.com/NVIDIA/warp/issues/947")
    case = _case(engine_expect={"warp": xfail})
    assert expectation_for(case, "warp") == (xfail, None)
    assert expectation_for(case, "taichi") == (case.expect, None)        # pass holds for every engine
    refused = _case(expect=Expectation(kind="unsupported", match="lgamma"))
    assert expectation_for(refused, "bundled")[0].kind == "unsupported"
    assert expectation_for(refused, "warp")[0].kind == "pass"           # the bundled refusal says nothing of Warp
    optioned = _case(engine={"launch": "packed"})
    assert "configure the bundled engine" in expectation_for(optioned, "taichi")[1]
    fault = _case(expect=Expectation(kind="error", error_type="KernelFaultError"))
    assert "checks no bounds" in expectation_for(fault, "warp")[1]
    contract = _case(expect=Expectation(kind="error", error_type="ActivityError"))
    assert expectation_for(contract, "warp") == (contract.expect, None)  # the launch contract holds for all


def test_an_adapter_refusal_is_unsupported_not_error():
    err = UnsupportedError("Warp has no forward-mode AD")
    assert judge_engine_refusal("warp", Expectation(), err, "ERROR", "x")[0] == "UNSUPPORTED"
    assert judge_engine_refusal("bundled", Expectation(), err, "ERROR", "x") == ("ERROR", "x")


def test_the_loader_reads_engines(tmp_path):
    from harness.cases import load_case_file
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text("def k(out):\n    out[0] = 1.0\n")
    (tmp_path / "cases").mkdir()
    path = tmp_path / "cases" / "c.yaml"
    path.write_text(textwrap.dedent("""\
        id: c
        kernel: kernels/k.py:k
        launch: {grid: 1, block: 1}
        args:
          out: {array: {shape: [1], dtype: float64, init: zeros}, activity: duplicated}
        engines:
          warp: {expect: {xfail: {reason: "known", link: "https://github.com/NVIDIA/warp/issues/947"}}}
        """))
    case, = load_case_file(path, tmp_path)
    assert case.engine_expect["warp"].kind == "xfail"
    assert case.engine_expect["warp"].link.endswith("/947")
    path.write_text(path.read_text().replace("warp: {expect", "jax: {expect"))
    from harness.core.errors import CaseError
    with pytest.raises(CaseError):
        load_case_file(path, tmp_path)


# ----------------------------------------------------------------------------- translation

def _kernel(tmp_path, source: str, name: str = "k"):
    path = tmp_path / f"kern_{abs(hash(source))}.py"
    path.write_text("import math\nfrom numba import cuda\n\n" + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name), path


LAUNCH = LaunchInfo((64,), (32,), (2,))


def test_numba_types_become_explicit_casts(tmp_path):
    k, _ = _kernel(tmp_path, """
        def k(out, x, n):
            i = cuda.grid(1)
            if i < x.shape[0]:
                s = 0.0
                for j in range(n):
                    s += 0.5 * x[i]
                out[i] = s
        """)
    params = [Param("out", Arr(F32, 1)), Param("x", Arr(F32, 1)), Param("n", INT)]
    text = Translator(WarpTarget(), k, params, LAUNCH).module_text("doc")
    assert "s = wp.float64(0.0)" in text                      # a float literal is float64 in numba
    assert "(wp.float64(0.5) * wp.float64(x[i]))" in text      # float32 * float64 promotes
    assert "out[i] = wp.float32(s)" in text                   # the store casts back
    ast.parse(text)
    taichi = Translator(TaichiTarget(), k, params, LAUNCH).module_text("doc")
    assert "for _t0 in range(64):" in taichi and "ti.cast(x[i], ti.f64)" in taichi
    ast.parse(taichi)


def test_thread_indices_follow_the_launch(tmp_path):
    k, _ = _kernel(tmp_path, """
        def k(out):
            t = cuda.threadIdx.x
            b = cuda.blockIdx.x
            out[b * cuda.blockDim.x + t] = 1.0
        """)
    text = Translator(WarpTarget(), k, [Param("out", Arr(F64, 1))], LAUNCH).module_text("doc")
    assert "t = (_t0 % 32)" in text and "b = (_t0 // 32)" in text


def test_refusals_name_the_line(tmp_path):
    k, path = _kernel(tmp_path, """
        def k(out, x):
            sh = cuda.shared.array(32, 'float64')
            out[0] = x[0]
        """)
    with pytest.raises(UnsupportedError, match=rf"{path.name}:6: cuda.shared.array"):
        Translator(WarpTarget(), k, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1))], LAUNCH)
    k, path = _kernel(tmp_path, """
        def k(out, x):
            out[0] = math.lgamma(x[0])
        """)
    with pytest.raises(UnsupportedError, match=rf"{path.name}:6: math.lgamma: Warp: no .*lgamma.*see https://nvidia.github.io/warp"):
        Translator(WarpTarget(), k, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1))], LAUNCH)


def test_early_returns_become_else_branches():
    body = ast.parse(textwrap.dedent("""
        if i >= n:
            return
        a = 1
        if a > 0:
            b = 2
        """)).body
    lifted = lift_early_returns(body)
    assert len(lifted) == 1 and isinstance(lifted[0], ast.If)
    assert [type(s).__name__ for s in lifted[0].orelse] == ["Assign", "If"]


def test_store_mask_twin_marks_plain_stores_only(tmp_path):
    k, _ = _kernel(tmp_path, """
        def k(out, acc, x):
            i = cuda.grid(1)
            out[i] = x[i]
            acc[i] += x[i]
        """)
    tr = Translator(TaichiTarget(), k, [Param("out", Arr(F64, 1)), Param("acc", Arr(F64, 1)),
                                        Param("x", Arr(F64, 1))], LAUNCH)
    tr.add_store_mask_kernel()
    text = tr.module_text("doc")
    assert "_stored_out[i] = 1" in text and "_stored_acc" in text and "_stored_acc[i] = 1" not in text


# ----------------------------------------------------------------------------- launches (engines extra)

def _launch(engine_name: str, kernel_ref: str, config, *args, mode):
    from harness.backends import get_backend
    from harness.adapters import create
    from harness.cases.inputs import load_kernel
    backend = get_backend()
    if not backend.can_launch:
        pytest.skip("launches need the sim or cuda backend")
    engine = create(engine_name, backend)
    return engine.launch(load_kernel(kernel_ref, ROOT), config, *args, mode=mode)


@pytest.mark.parametrize("engine", ["warp", "taichi"])
def test_adapters_reproduce_the_in_place_square_bug(engine):
    """A[0] = A[0] * A[0] at A = 3: right 6; Warp 1.19 and Taichi 1.7.4 give 18 (the adjoint reads
    the overwritten A). When an upgrade fixes it, this test says so."""
    pytest.importorskip("warp" if engine == "warp" else "taichi")
    from harness.core.activity import Duplicated
    from harness.engine.runtime.launch import LaunchConfig
    A, dA = np.array([3.0]), np.array([1.0])
    result = _launch(engine, "kernels/war.py:square_in_place_first", LaunchConfig.of(1, 1), Duplicated(A, dA),
                     mode="reverse")
    assert A[0] == 9.0
    assert dA[0] == 18.0
    assert Path(result.plan.source_path).read_text().count("A[0]") >= 2


def test_warp_refuses_forward_mode_and_active_scalars():
    pytest.importorskip("warp")
    from harness.core.activity import Active, Duplicated
    from harness.engine.runtime.launch import LaunchConfig
    out, dout, x, dx = np.zeros(4), np.ones(4), np.ones(4), np.zeros(4)
    with pytest.raises(UnsupportedError, match="Warp has no forward-mode AD"):
        _launch("warp", "kernels/elementwise.py:scale", LaunchConfig.threads(4, 4), Duplicated(out, dout),
                Active(np.float64(2.0)), Duplicated(x, dx), mode="forward")
    with pytest.raises(UnsupportedError, match="'alpha'.*no adjoint for a scalar kernel argument"):
        _launch("warp", "kernels/elementwise.py:scale", LaunchConfig.threads(4, 4), Duplicated(out, dout),
                Active(np.float64(2.0)), Duplicated(x, dx), mode="reverse")


@pytest.mark.parametrize("engine, system", [("warp", "Warp"), ("taichi", "Taichi")])
def test_adapters_refuse_numbas_random_numbers_naming_the_draw(engine, system):
    """Neither system has xoroshiro128p states: the refusal names the draw inside the device
    function (kernels/rng.py) and says why, before any argument is unpacked."""
    pytest.importorskip(engine)
    from harness.core.activity import Const, Duplicated
    from harness.core.rng_states import seeded_states
    from harness.engine.runtime.launch import LaunchConfig
    line = next(n for n, text in enumerate((ROOT / "kernels/rng.py").read_text().splitlines(), 1)
                if "return v + 0.01 * xoroshiro128p_normal_float32(states, i)" in text)
    x = np.ones(8, np.float32)
    with pytest.raises(UnsupportedError, match=rf"rng.py:{line}: xoroshiro128p_normal_float32\(...\) draws from "
                                               rf"numba's generator: {system}: .*(PCG|ti.random)"):
        _launch(engine, "kernels/rng.py:jitter_then_square", LaunchConfig.threads(8, 8),
                Duplicated(np.zeros(8, np.float32), np.ones(8, np.float32)), Duplicated(x, np.zeros(8, np.float32)),
                Const(seeded_states(8, 1)), 8, mode="reverse")


def test_taichi_functions_return_once_and_warp_int64_atomics_take_int64(tmp_path):
    """Taichi refuses a return inside a non-static if (helper-early-return was a TaichiSyntaxError);
    Warp refuses an int32 value for an int64 array's atomic (atomic-ticket-loop was a parse error)."""
    k, _ = _kernel(tmp_path, """
        @cuda.jit(device=True)
        def pair(a, b):
            if a < b:
                return a, b
            return b, a

        @cuda.jit(device=True)
        def loops_out(v, n):
            for j in range(n):
                if v > 1.0:
                    return v
            return 0.0

        def k(out, x, counter):
            i = cuda.grid(1)
            if i < x.shape[0]:
                lo, hi = pair(x[i], 1.0)
                slot = cuda.atomic.add(counter, i, 1)
                out[i] = lo * hi + slot
        """)
    params = [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1)), Param("counter", Arr("i64", 1))]
    text = Translator(TaichiTarget(), k, params, LAUNCH).module_text("doc")
    func = text[text.index("@ti.func"):text.index("@ti.kernel")]
    assert func.count("return") == 1 and "return ti.Vector([_ret0, _ret1])" in func, func
    assert "_ret0 = a" in func and "_ret0 = b" in func
    warp = Translator(WarpTarget(), k, params, LAUNCH).module_text("doc")
    assert "wp.int32(wp.atomic_add(counter, i, wp.int64(1)))" in warp, warp
    k2, _ = _kernel(tmp_path, """
        @cuda.jit(device=True)
        def loops_out(v, n):
            for j in range(n):
                if v > 1.0:
                    return v
            return 0.0

        def k(out, x, n):
            i = cuda.grid(1)
            if i < x.shape[0]:
                out[i] = loops_out(x[i], n)
        """)
    with pytest.raises(UnsupportedError, match="a return inside a loop of a device function"):
        Translator(TaichiTarget(), k2, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1)), Param("n", INT)],
                   LAUNCH).module_text("doc")


def test_taichi_forward_gives_a_const_array_no_tangent_left_from_an_earlier_run():
    """The adapter reuses a Taichi field per (position, role, dtype, shape), and runs forward mode
    without clearing duals: a run that made `y` Duplicated leaves a dual in y's field, which a later
    run with `y` Const must not see (the adapter zeroes every float field's dual first)."""
    pytest.importorskip("taichi")
    from harness.core.activity import Duplicated
    from harness.engine.runtime.launch import LaunchConfig
    cfg = LaunchConfig.threads(4, 4)
    x, y = np.linspace(0.1, 0.4, 4), np.linspace(1.0, 2.0, 4)
    _launch("taichi", "kernels/layouts.py:mul_sin", cfg, Duplicated(np.zeros(4), np.zeros(4)),
            Duplicated(x.copy(), np.zeros(4)), Duplicated(y.copy(), np.full(4, 5.0)), mode="forward")
    dout = np.zeros(4)
    _launch("taichi", "kernels/layouts.py:mul_sin", cfg, Duplicated(np.zeros(4), dout),
            Duplicated(x.copy(), np.zeros(4)), y.copy(), mode="forward")
    assert np.all(dout == 0.0), f"x's tangent is zero and y is Const: J v must be 0, got {dout}"


# ----------------------------------------------------------------------------- the dialect the adapters translate

def test_negative_indices_wrap_as_in_numba_and_provably_nonnegative_ones_do_not(tmp_path):
    """numba wraps a negative index around its dimension (`im[x - 1]` at x = 0 is the last
    element); Warp and Taichi would read out of bounds, so the translation spells the wrap."""
    k, _ = _kernel(tmp_path, """
        def k(out, im):
            x = cuda.grid(1)
            out[x] = im[x - 1] + im[x + 1]
        """)
    params = [Param("out", Arr(F64, 1)), Param("im", Arr(F64, 1))]
    warp = Translator(WarpTarget(), k, params, LAUNCH).module_text("doc")
    assert "im[wp.where((x - 1) < 0, (x - 1) + im.shape[0], (x - 1))]" in warp, warp
    assert "im[(x + 1)]" in warp and "out[x] =" in warp                   # x >= 0: no wrap
    taichi = Translator(TaichiTarget(), k, params, LAUNCH).module_text("doc")
    assert "im[ti.select((x - 1) < 0, (x - 1) + im.shape[0], (x - 1))]" in taichi, taichi


def test_gridsize_len_size_ndim_and_shape_unpacking_translate(tmp_path):
    k, _ = _kernel(tmp_path, """
        def k(out, a):
            start = cuda.grid(1)
            M, N = a.shape
            for i in range(start, out.size, cuda.gridsize(1)):
                out[i] = a[i % M, i % N] * len(a) + a.ndim
        """)
    params = [Param("out", Arr(F64, 1)), Param("a", Arr(F64, 2))]
    warp = Translator(WarpTarget(), k, params, LAUNCH).module_text("doc")
    assert "M = a.shape[0]" in warp and "N = a.shape[1]" in warp, warp
    assert "for i in range(start, (out.shape[0]), 64):" in warp        # gridsize: 2 blocks of 32 threads
    assert "a[(i % M), (i % N)]" in warp and "* wp.float64(a.shape[0])" in warp and "wp.float64(2)" in warp
    ast.parse(warp)


def test_integer_arrays_of_every_width_translate(tmp_path):
    k, _ = _kernel(tmp_path, """
        def k(out, idx, small):
            i = cuda.grid(1)
            out[i] = out[idx[i]] + small[i]
            small[i] = 1
        """)
    for code in ("i8", "i16", "i64", "u8", "u16", "u32", "u64"):
        params = [Param("out", Arr(F64, 1)), Param("idx", Arr(code, 1)), Param("small", Arr(code, 1))]
        warp = Translator(WarpTarget(), k, params, LAUNCH).module_text("doc")
        wtype = f"wp.{'u' if code[0] == 'u' else ''}int{code[1:]}"
        assert f"idx: wp.array(dtype={wtype}, ndim=1)" in warp and f"small[i] = {wtype}(1)" in warp, warp
        taichi = Translator(TaichiTarget(), k, params, LAUNCH).module_text("doc")
        assert "ti.cast(idx[i], ti.i32)" in taichi
        wrapped = "wp.where(" in warp.split("out[i] =")[1].splitlines()[0]
        assert wrapped == (code[0] == "i"), warp          # an unsigned element is never negative


def test_shared_arrays_and_barriers_are_taichis_block_level_ones_on_cuda_and_refused_elsewhere(tmp_path):
    k, path = _kernel(tmp_path, """
        from numba import float64
        TPB = 32

        def k(out, x):
            sh = cuda.shared.array(shape=TPB, dtype=float64)
            t = cuda.threadIdx.x
            i = cuda.grid(1)
            sh[t] = x[i]
            cuda.syncthreads()
            out[i] = sh[(t + 1) % cuda.blockDim.x]
        """)
    params = [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1))]
    taichi = Translator(TaichiTarget(block_level=True), k, params, LAUNCH)
    taichi.add_store_mask_kernel()
    text = taichi.module_text("doc")
    assert "ti.loop_config(block_dim=32)" in text and "sh = ti.simt.block.SharedArray((32,), ti.f64)" in text
    assert "ti.simt.block.sync()" in text and "_stored_sh" not in text, text
    ast.parse(text)
    with pytest.raises(UnsupportedError, match=rf"{path.name}:9: cuda.shared.array: Taichi: on the CPU.*"
                                               r"see https://docs.taichi-lang.org"):
        Translator(TaichiTarget(), k, params, LAUNCH)
    with pytest.raises(UnsupportedError, match=r"cuda.shared.array: Warp: .*tiles.*see https://nvidia.github.io/warp"):
        Translator(WarpTarget(), k, params, LAUNCH)


def test_the_missing_math_functions_are_what_the_targets_cannot_spell():
    """limits.MISSING_MATH (what docs/engines.md says each system lacks) is exactly the math
    functions numba.cuda offers that a target has no spelling for, less the translator's own gaps."""
    from harness.adapters.limits import MISSING_MATH, UNTRANSLATED_MATH
    from harness.adapters.translate import MATH_FUNCTIONS
    numba_math = set(MATH_FUNCTIONS.values()) - {"min", "max", "floor", "ceil", "trunc"}
    for target in (WarpTarget(), TaichiTarget()):
        assert numba_math - set(target.math) - UNTRANSLATED_MATH == MISSING_MATH[target.system], target.name


# ----------------------------------------------------------------------------- the rest of the dialect

def _both(k, params):
    return (Translator(WarpTarget(), k, params, LAUNCH).module_text("doc"),
            Translator(TaichiTarget(), k, params, LAUNCH).module_text("doc"))


def test_inner_functions_become_device_functions_taking_what_they_read_at_each_call(tmp_path):
    """An inner function's free names are read at the call (Python's late binding): the lifted
    function takes them as parameters after its own, and a call passes their current values."""
    k, _ = _kernel(tmp_path, """
        def k(out, x):
            a = 2.0
            def scaled(t, p=2):
                return a * t ** p + x[0]
            def twice(t):
                return scaled(t) + scaled(t, 1)
            i = cuda.grid(1)
            out[i] = twice(x[i])
            a = 3.0
            out[i] += scaled(x[i])
        """)
    params = [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1))]
    warp, taichi = _both(k, params)
    assert "def k__scaled_f64_int_f64_a1f64(t: wp.float64, p: wp.int32, a: wp.float64, x: wp.array" in warp, warp
    assert "def k__twice_f64_f64_a1f64(t: wp.float64, a: wp.float64, x: wp.array" in warp
    assert "k__scaled_f64_int_f64_a1f64(t, 2, a, x)" in warp and "k__scaled_f64_int_f64_a1f64(t, 1, a, x)" in warp
    assert "out[i] = k__twice_f64_f64_a1f64(x[i], a, x)" in warp
    assert warp.index("a = wp.float64(3.0)") < warp.index("k__scaled_f64_int_f64_a1f64(x[i], 2, a, x)")
    assert "@ti.func" in taichi and "k__twice_f64_f64_a1f64(x[i], a, x)" in taichi
    ast.parse(warp), ast.parse(taichi)


def test_an_inner_function_defined_in_a_block_is_refused_when_called_after_it(tmp_path):
    k, path = _kernel(tmp_path, """
        def k(out, x):
            i = cuda.grid(1)
            if i > 3:
                def f(t):
                    return t * 2.0
                out[i] = f(x[i])
            out[i] += f(x[i])
        """)
    with pytest.raises(UnsupportedError, match=rf"{path.name}:11: inner function f is defined inside a branch "
                                                r"or loop \(line 8\)"):
        Translator(WarpTarget(), k, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1))], LAUNCH)


def test_an_inner_function_whose_callee_reads_a_name_it_rebinds_is_refused(tmp_path):
    """g reads the kernel's s; f, which calls g, has an s of its own: passing f's s would be wrong."""
    k, path = _kernel(tmp_path, """
        def k(out, x):
            s = 2.0
            def g(t):
                return t * s
            def f(t):
                s = 5.0
                return g(t) + s
            out[0] = f(x[0])
        """)
    with pytest.raises(UnsupportedError, match=r"inner function f binds s, which inner function g it calls reads"):
        Translator(WarpTarget(), k, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1))], LAUNCH)


def test_loop_else_runs_under_the_flag_its_breaks_set(tmp_path):
    k, _ = _kernel(tmp_path, """
        def k(out, x, n):
            i = cuda.grid(1)
            acc = 0.0
            for j in range(n):
                if j == 3:
                    break
                acc += x[j]
            else:
                acc = -acc
            while acc > 1.0:
                acc *= 0.5
            else:
                acc += 1.0
            out[i] = acc
        """)
    warp, taichi = _both(k, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1)), Param("n", INT)])
    flag = "_loop8_4_broke"
    assert f"{flag} = wp.bool(False)" in warp and f"{flag} = wp.bool(True)" in warp, warp
    assert f"if (not {flag}):" in warp and "acc = (-acc)" in warp.split(f"if (not {flag}):")[1]
    after_while = warp.split("while (acc > wp.float64(1.0)):")[1]
    assert "acc = (acc + wp.float64(1.0))" in after_while and "_broke" not in after_while   # no break: no flag
    assert f"{flag} = False" in taichi
    ast.parse(warp), ast.parse(taichi)


def test_tuple_assignment_reads_every_value_before_binding_any_target(tmp_path):
    k, _ = _kernel(tmp_path, """
        def pair(a, b):
            return a + b, a - b

        def k(out, x):
            i = cuda.grid(1)
            p, q = x[i], 2.0 * x[i]
            p, q = q, p
            out[i, 0], (out[i, 1], out[i, 2]) = p, pair(p, q)
        """)
    warp, taichi = _both(k, [Param("out", Arr(F64, 2)), Param("x", Arr(F64, 1))])
    swap = warp.split("p = _unpack")[0]
    assert "_unpack11_4_0 = q" in warp and "_unpack11_4_1 = p" in warp, warp
    assert "p = _unpack11_4_0" in warp and "q = _unpack11_4_1" in warp and "p = q\n" not in swap
    assert "_unpack12_4_part0, _unpack12_4_part1 = pair_f64_f64(p, q)" in warp
    assert "out[i, 1] = _unpack12_4_1" in warp and "out[i, 2] = _unpack12_4_2" in warp
    ast.parse(warp), ast.parse(taichi)


def test_local_arrays_integer_math_lanes_and_module_numbers_translate(tmp_path):
    k, _ = _kernel(tmp_path, """
        def k(out, x):
            i = cuda.grid(1)
            tmp = cuda.local.array(4, 'float64')
            for d in (0, 1, 2, 3):
                tmp[d] = math.ldexp(x[i], d) + math.degrees(math.pi)
            k = math.floor(x[i]) + cuda.laneid * cuda.warpsize
            if not math.isinf(x[i]):
                out[i] = tmp[k % 4] + math.exp2(x[i]) + math.inf * 0.0
        """)
    warp, taichi = _both(k, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1))])
    assert "tmp = wp.vector(dtype=wp.float64, length=4)" in warp, warp
    assert "d = wp.int32(3)" in warp and "for d in" not in warp                      # the tuple loop unrolled
    assert "(x[i] * wp.pow(wp.float64(2.0), wp.float64(wp.int32(d))))" in warp      # d stays an integer
    assert "wp.int32(wp.floor(x[i]))" in warp and "((_t0 % 32) % 32)" in warp and "* 32" in warp
    assert "wp.isinf(x[i])" in warp and "wp.float64(wp.inf)" in warp and "wp.pow(wp.float64(2.0), x[i])" in warp
    assert "tmp = ti.Vector.zero(ti.f64, 4)" in taichi and "ti.math.isinf(x[i])" in taichi
    assert "ti.cast(ti.floor(x[i]), ti.i32)" in taichi and "ti.f64(ti.math.inf)" in taichi
    ast.parse(warp), ast.parse(taichi)


def test_a_store_into_a_local_array_at_a_run_time_index_is_recorded_for_taichi(tmp_path):
    """Taichi's autodiff cannot take a store into a local vector at a run-time index (a read at one
    it can): the kernel records the first such store, which the Taichi adapter refuses to differentiate."""
    k, path = _kernel(tmp_path, """
        def k(out, x, n):
            i = cuda.grid(1)
            tmp = cuda.local.array(4, 'float64')
            tmp[0] = x[i]
            out[i] = tmp[n % 4]
            tmp[n % 4] = out[i] * tmp[0]
            out[i] += tmp[1]
        """)
    params = [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1)), Param("n", INT)]
    assert Translator(TaichiTarget(), k, params, LAUNCH).kernel.dynamic_local_index == (str(path), 10)
    k, _ = _kernel(tmp_path, """
        def k(out, x, n):
            i = cuda.grid(1)
            tmp = cuda.local.array(4, 'float64')
            tmp[0] = x[i]
            out[i] = tmp[n % 4]
        """)
    assert Translator(TaichiTarget(), k, params, LAUNCH).kernel.dynamic_local_index is None


def test_a_name_for_one_of_two_arrays_reads_through_a_flag_and_needs_one_shape():
    """`data = buf_0 if step % 2 == 0 else buf_1`: loads select, stores branch on the flag kept at
    the binding; the translation reads both arrays, so arrays of different shapes are refused."""
    pytest.importorskip("warp")
    from harness.core.activity import Const, Duplicated
    from harness.engine.runtime.launch import LaunchConfig
    out, dout = np.zeros(8), np.ones(8)
    a, b = np.arange(8.0), np.arange(8.0) + 10
    result = _launch("warp", "kernels/dialect.py:ping_pong", LaunchConfig.threads(8, 8), Duplicated(out, dout),
                     Duplicated(a, np.zeros(8)), Duplicated(b, np.zeros(8)), Const(np.int64(1)), mode="primal")
    np.testing.assert_allclose(out, b * b)
    text = Path(result.plan.source_path).read_text()
    assert "_data_is_buf_0 = " in text and "wp.where(_data_is_buf_0, buf_0[i], buf_1[i])" in text, text
    with pytest.raises(UnsupportedError, match=r"arrays 'buf_0' \(8,\) and 'buf_1' \(9,\).*differ in shape"):
        _launch("warp", "kernels/dialect.py:ping_pong", LaunchConfig.threads(8, 8), Duplicated(out, dout),
                Duplicated(a, np.zeros(8)), Duplicated(np.zeros(9), np.zeros(9)), Const(np.int64(1)), mode="primal")


def test_integer_bitwise_operators_translate_and_float_ones_are_refused(tmp_path):
    k, _ = _kernel(tmp_path, """
        def k(out, x):
            i = cuda.grid(1)
            j = ((i << 1) ^ (i >> 1)) & 7 | ~i
            j |= 1
            out[i] = x[j % 8]
        """)
    warp, taichi = _both(k, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1))])
    assert "j = ((((i << 1) ^ (i >> 1)) & 7) | (~i))" in warp and "j = (j | 1)" in warp, warp
    assert "j = ((((i << 1) ^ (i >> 1)) & 7) | (~i))" in taichi
    k, path = _kernel(tmp_path, """
        def k(out, x):
            out[0] = x[0] & 1.0
        """)
    with pytest.raises(UnsupportedError, match=rf"{path.name}:6: bitwise & of a float"):
        Translator(WarpTarget(), k, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1))], LAUNCH)


def test_a_guarded_read_or_domain_is_a_branch_and_a_plain_choice_a_select(tmp_path):
    """What Python evaluates lazily and must not run where its guard fails (a read past the end,
    a square root of a negative number) is a branch in both systems; a choice between values that
    may run eagerly stays one select (harness/adapters/lazy.py)."""
    k, _ = _kernel(tmp_path, """
        def k(out, x, n):
            i = cuda.grid(1)
            v = x[i + 1] if i + 1 < n else 0.0
            w = math.sqrt(v) if v > 0.0 else -v
            u = v if i < n else w
            k = 0
            while k < n and x[k] > 0.0:
                k += 1
            out[i] = u + float(k)
        """)
    warp, taichi = _both(k, [Param("out", Arr(F64, 1)), Param("x", Arr(F64, 1)), Param("n", INT)])
    for text, select in ((warp, "wp.where"), (taichi, "ti.select")):
        read = text.split("if ((i + 1) < n):")[1].split("else:")
        assert "= x[(i + 1)]" in read[0] and "x[" not in read[1].split("v = ")[0], text
        assert "sqrt" in text.split("if (v > ")[1].split("else:")[0]
        assert f"u = {select}((i < n), v, w)" in text
        loop = text.split("while True:")[1]
        assert "(x[k] > " in loop.split("break")[0] and "k = (k + 1)" in loop.split("break")[1]
        ast.parse(text)
    assert "_choice7_8_7_38 = ti.f64(0.0)\n" in taichi      # Taichi: declared before its branch


def test_taichi_adapter_starts_a_new_program_before_taichis_snode_tree_limit(monkeypatch):
    """Taichi 1.7.4 segfaults at a program's 513th SNode tree (reproducers/taichi_snode_tree_limit.py),
    and every field the adapter declares may be one: the whole corpus through one worker died of it.
    The adapter starts a new Taichi program before its count passes FIELD_BUDGET; here the budget is
    small, and the runs after each restart (fields declared again, kernels compiled again) are
    still right."""
    pytest.importorskip("taichi")
    from harness.adapters import taichi_adapter
    from harness.core.activity import Active, Duplicated
    from harness.engine.runtime.launch import LaunchConfig
    monkeypatch.setattr(taichi_adapter, "FIELD_BUDGET", 9)
    programs = taichi_adapter._program
    for n in range(3, 15):                    # a new shape each time: new fields
        out, dout = np.zeros(n), np.ones(n)
        x, dx = np.linspace(-1.0, 1.0, n), np.zeros(n)
        _launch("taichi", "kernels/elementwise.py:scale", LaunchConfig.threads(n, n), Duplicated(out, dout),
                np.float64(2.5), Duplicated(x, dx), mode="reverse")
        np.testing.assert_allclose(out, 2.5 * x)
        np.testing.assert_allclose(dx, 2.5)
        assert taichi_adapter._declared_fields <= 9
    assert taichi_adapter._program - programs >= 4      # 4 fields per run (out, x, their masks' room)
