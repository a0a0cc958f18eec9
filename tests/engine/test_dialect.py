"""The numba.cuda dialect the engine's front end accepts (harness/engine/frontend/desugar.py, the lowering):
the normal form each everyday spelling is rewritten into, with its source lines; the lowering of
what a rewrite cannot express (tuple targets, views, array rebinding, warp barriers, fences); and
the refusals that remain, each naming its line and, where numba.cuda refuses it too, saying so.
End to end (forward and reverse, sim and ptx) in cases/dialect-*.yaml over kernels/dialect.py.
"""
from __future__ import annotations

import ast
import importlib.util
import textwrap

import pytest

from harness.core.errors import UnsupportedError

HEADER = "import math\nimport numba\nimport numpy as np\nfrom numba import cuda, float32, types\n\nTPB = 32\n"


@pytest.fixture
def kernel(tmp_path, backend):            # backend: numba configured (simulator or not) before import
    count = [0]

    def make(source: str, name: str = "k"):
        count[0] += 1
        path = tmp_path / f"dialect_{count[0]}.py"
        path.write_text(HEADER + textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, name)
    return make


def normal(fn) -> str:
    from harness.engine.frontend.source import parse_kernel
    return ast.unparse(parse_kernel(fn).tree)


def lower(fn, *arrays, ndim=1, dtype="float32"):
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.ir.ssa import Param
    from harness.engine.frontend.normalize import lower_kernel
    names = arrays or ("out", "x")
    return lower_kernel(parse_kernel(fn), [Param(n, "array", dtype, ndim if n != "out" else 1) for n in names])


def statements(ir):
    from harness.engine.ir.ssa import walk
    return list(walk(ir.body))


# ----------------------------------------------------------------------------- the normal form

def test_keyword_shared_arrays_become_positional_with_folded_shapes_and_dtype_names(kernel):
    k = kernel("""
        def k(out, x):
            a = cuda.shared.array(shape=TPB, dtype=numba.float32)
            b = cuda.shared.array(shape=(TPB * 2, 32 + 2), dtype=types.float64)
            c = numba.cuda.local.array(dtype=np.int32, shape=4)
            d = cuda.local.array(TPB // 8, 'float32')
            e = cuda.shared.array(TPB, float32)
            out[0] = x[0]
        """)
    text = normal(k)
    assert "a = cuda.shared.array(32, 'float32')" in text
    assert "b = cuda.shared.array((64, 34), 'float64')" in text
    assert "c = numba.cuda.local.array(4, 'int32')" in text
    assert "d = cuda.local.array(4, 'float32')" in text
    assert "e = cuda.shared.array(32, 'float32')" in text
    ir = lower(k)                          # the keyword form crashed with an IndexError before
    assert [(p.name, p.shape, p.dtype) for p in ir.local_arrays] == [
        ("a", (32,), "float32"), ("b", (64, 34), "float64"), ("c", (4,), "int32"), ("d", (4,), "float32"),
        ("e", (32,), "float32")]


def test_normal_form_keeps_source_lines(kernel):
    from harness.engine.frontend.source import parse_kernel
    k = kernel("""
        def k(out, x):
            n = len(x)
            sm = cuda.shared.array(shape=TPB, dtype=float32)
            out[0] = n
        """)
    src = parse_kernel(k)
    first = src.tree.lineno
    for node in ast.walk(src.tree):
        if hasattr(node, "lineno"):
            assert first <= node.lineno <= first + 3, ast.dump(node)
    shape = next(n for n in ast.walk(src.tree) if isinstance(n, ast.Subscript))
    assert shape.lineno == first + 1 and ast.unparse(shape) == "x.shape[0]"
    assert ast.unparse(src.source_tree).count("len(x)") == 1          # the tree as written is kept


def test_a_local_name_shadowing_a_module_constant_is_not_folded(kernel):
    k = kernel("""
        def k(out, x):
            TPB = 4
            sm = cuda.local.array(TPB, float32)
            out[0] = x[0]
        """)
    assert "cuda.local.array(TPB, 'float32')" in normal(k)
    with pytest.raises(UnsupportedError, match=r"shape `TPB` is not a constant: numba\.cuda needs"):
        lower(k)


def test_len_shape_unpacking_annotations_asserts_prints_and_chained_assignment(kernel):
    k = kernel("""
        def k(out, x):
            M, N = x.shape
            n: int = len(out)
            t: float32
            assert n > 0, "empty"
            print(n)
            a = b = x[0, 0]
            if n > 1:
                assert M > 0
            out[0] = M * N + n + a + b
        """)
    text = normal(k)
    assert "M, N = (x.shape[0], x.shape[1])" in text and "n = out.shape[0]" in text
    assert "assert" not in text and "print" not in text and "t:" not in text
    assert "a = x[0, 0]\n    b = a" in text
    assert "if n > 1:\n        pass" in text
    lower(k, ndim=2)


def test_const_array_like_becomes_a_local_array_holding_its_values(kernel):
    k = kernel("""
        C = np.array([[1.5, 2.0], [-3.0, 0.25]])

        def k(out, x):
            c = cuda.const.array_like(C)
            out[0] = c[1, 0] * x[0]
        """)
    text = normal(k)
    assert "c = cuda.local.array((2, 2), 'float64')" in text
    assert "c[1, 0] = -3.0" in text and "c[0, 1] = 2.0" in text
    lower(k)


def test_shared_array_declared_in_an_if_moves_to_the_top(kernel):
    k = kernel("""
        def k(out, x):
            i = cuda.grid(1)
            if i < 64:
                sm = cuda.shared.array(TPB, float32)
                sm[cuda.threadIdx.x] = x[i]
            cuda.syncthreads()
            out[i] = sm[0]
        """)
    from harness.engine.ir.ssa import Alloc
    body = lower(k).body
    assert isinstance(body[0], Alloc) and body[0].array.kind == "shared"


def test_branches_on_constant_conditions_become_the_side_numba_keeps(kernel):
    k = kernel("""
        DEBUG = False
        def k(out, x):
            i = cuda.grid(1)
            t = 1.04
            if TPB > 16 and not DEBUG:
                v = x[i] * x[i]
            else:
                v = math.sin(x[i])
            if t > 0.46:
                v = v + 1.0
            w = 2.0 if DEBUG else 3.0
            out[i] = v * w
        """)
    text = normal(k)
    assert "if" not in text and "sin" not in text
    assert "v = x[i] * x[i]" in text and "v = v + 1.0" in text and "w = 3.0" in text


def test_names_bound_twice_or_per_thread_do_not_fold(kernel):
    k = kernel("""
        def k(out, x):
            i = cuda.grid(1)
            t = 1.04
            if i > 3:
                t = 0.1
            if t > 0.46:
                out[i] = x[i]
            if i > 0:
                out[i] = 2.0 * x[i]
        """)
    assert normal(k).count("if ") == 3


# ----------------------------------------------------------------------------- the lowering

def test_tuple_unpacking_into_elements_nested_targets_and_swaps(kernel):
    from harness.engine.ir.ssa import Load, Store
    k = kernel("""
        @cuda.jit(device=True)
        def pair(v):
            return v + 1.0, v * 2.0

        def k(out, x):
            out[0], out[1] = pair(x[0])
            (p, q), r = (x[1], x[2]), x[3]
            x[4], x[5] = x[5], x[4]
            out[2] = p + q + r
        """)
    stmts = statements(lower(k))
    stores = [(s.array, s.index[0].value) for s in stmts if isinstance(s, Store)]
    assert stores == [("out", 0), ("out", 1), ("x", 4), ("x", 5), ("out", 2)]
    swap = [s for s in stmts if getattr(s, "line", 0) == stmts[-1].line - 1]
    kinds = [type(s.expr).__name__ if hasattr(s, "expr") else type(s).__name__ for s in swap]
    assert kinds == ["Load", "Load", "Store", "Store"], "both values are read before either is written"
    assert all(isinstance(s.expr, Load) for s in swap[:2])


def test_starred_unpacking_is_numbas_refusal(kernel):
    k = kernel("""
        def k(out, x):
            a, *b = (x[0], x[1], x[2])
            out[0] = a
        """)
    with pytest.raises(UnsupportedError, match=r":\d+: .*starred unpacking cannot be compiled by numba\.cuda itself"):
        lower(k)


def test_numba_spellings_of_grid_casts_warp_barrier_and_fences(kernel):
    from harness.engine.ir.ssa import Assign, Barrier, Prim, Special
    k = kernel("""
        def k(out, x):
            i = numba.cuda.grid(1)
            cuda.syncwarp()
            cuda.threadfence()
            cuda.threadfence_block()
            j = numba.int32(cuda.laneid % cuda.warpsize)
            out[i] = float32(x[i]) + j
        """)
    stmts = statements(lower(k))
    assert isinstance(stmts[0].expr, Special) and stmts[0].expr.name == "grid.0"
    assert isinstance(stmts[1], Barrier), "a top-level syncwarp is mirrored as a block barrier"
    fences = [s.expr.op for s in stmts if isinstance(s, Assign) and isinstance(s.expr, Prim)
              and s.expr.op.startswith("threadfence")]
    assert fences == ["threadfence", "threadfence_block"]
    assert any(isinstance(s, Assign) and isinstance(s.expr, Prim) and s.expr.op == "cast_int32" for s in stmts)


def test_syncwarp_under_a_thread_dependent_condition_is_refused_at_its_line(kernel):
    """syncwarp is mirrored as a block barrier, so it is refused where a block barrier would be:
    where only some threads of the block reach it (barriers.py)."""
    k = kernel("""
        def k(out, x):
            i = cuda.grid(1)
            if i < 16:
                cuda.syncwarp()
            out[i] = x[i]
        """)
    with pytest.raises(UnsupportedError, match=r"dialect_\d+\.py:11: .*reached by only some threads of a block"):
        lower(k)


def test_ping_pong_binding_lowers_the_rest_once_per_array(kernel):
    from harness.engine.ir.ssa import If, Load
    k = kernel("""
        def k(out, a, b, step):
            i = cuda.grid(1)
            data = a if step % 2 == 0 else b
            out[i] = data[i]
        """)
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.ir.ssa import Param
    from harness.engine.frontend.normalize import lower_kernel
    params = [Param("out", "array", "float64", 1), Param("a", "array", "float64", 1),
              Param("b", "array", "float64", 1), Param("step", "scalar", "int64")]
    ir = lower_kernel(parse_kernel(k), params)
    choice = next(s for s in ir.body if isinstance(s, If))
    loads = lambda block: [s.expr.array for s in block if hasattr(s, "expr") and isinstance(s.expr, Load)]  # noqa: E731
    assert loads(choice.body) == ["a"] and loads(choice.orelse) == ["b"]


def test_array_rebound_in_a_block_with_other_statements_and_used_after_it_is_refused(kernel):
    k = kernel("""
        def k(out, a, b):
            i = cuda.grid(1)
            data = a
            if i > 2:
                data = b
                out[0] = 1.0
            out[i] = data[i]
        """)
    with pytest.raises(UnsupportedError, match=r":14: 'data' was bound to an array inside a block \(line 12\)"):
        lower(k, "out", "a", "b")


def test_array_rebound_by_branches_that_only_bind_lowers_the_rest_once_per_branch(kernel):
    """`data = a; if i > 2: data = b` (no other statement in the branch): the read after the `if`
    is a[i] on one path and b[i] on the other, as `data = b if i > 2 else a` would make it."""
    from harness.engine.ir.ssa import Load
    k = kernel("""
        def k(out, a, b):
            i = cuda.grid(1)
            data = a
            if i > 2:
                data = b
            out[i] = data[i]
        """)
    loads = {s.expr.array for s in statements(lower(k, "out", "a", "b"))
             if hasattr(s, "expr") and isinstance(s.expr, Load)}
    assert loads == {"a", "b"}


def test_rows_of_shared_arrays_index_their_array(kernel):
    from harness.engine.ir.ssa import Load
    k = kernel("""
        @cuda.jit(device=True)
        def first(row):
            return row[0] + row[row.size - 1] + row.ndim

        def k(out, x):
            sm = cuda.shared.array((4, TPB), float32)
            sm[2, cuda.threadIdx.x] = x[0]
            cuda.syncthreads()
            out[0] = first(sm[2, :]) + first(sm[3])
        """)
    loads = [(s.expr.array, tuple(getattr(a, "value", a) for a in s.expr.index)) for s in statements(lower(k))
             if hasattr(s, "expr") and isinstance(s.expr, Load) and s.expr.array == "sm"]
    assert loads[0] == ("sm", (2, 0)) and loads[2][0] == "sm" and loads[2][1][0] == 3
    assert loads[1][0] == "sm" and loads[1][1][0] == 2 and isinstance(loads[1][1][1], str)


def test_windows_index_their_array_from_the_window_start(kernel):
    from harness.engine.ir.ssa import Load, Prim
    k = kernel("""
        @cuda.jit(device=True)
        def first(row):
            return row[0] + row[-1]

        def k(out, x):
            out[0] = first(x[0, 1:]) + x[1][2]
        """)
    body = statements(lower(k, ndim=2))
    defs = {s.target: s.expr for s in body if hasattr(s, "target") and hasattr(s, "expr")}
    loads = [s.expr for s in body if hasattr(s, "expr") and isinstance(s.expr, Load)]
    assert [ld.array for ld in loads] == ["x", "x", "x"]
    assert all(getattr(ld.index[0], "value", None) == v for ld, v in zip(loads, (0, 0, 1)))
    assert getattr(loads[2].index[1], "value", None) == 2            # x[1][2] is the element x[1, 2]
    # the window's start is 1 clamped to the row (Python's slice rule), and row[-1] its last element
    start = defs[loads[0].index[1]]
    assert isinstance(start, Prim) and start.op == "min"
    last = defs[loads[1].index[1]]
    assert isinstance(last, Prim) and last.op == "add" and last.args[0] == loads[0].index[1]


@pytest.mark.parametrize("window", ["x[0, 1:5:0]", "x[0, ::x.shape[1]]"])
def test_a_slice_step_of_zero_or_known_only_at_run_time_is_refused_at_its_line(kernel, window):
    k = kernel(f"""
        @cuda.jit(device=True)
        def first(row):
            return row[0]

        def k(out, x):
            out[0] = first({window})
        """)
    with pytest.raises(UnsupportedError, match=r"dialect_\d+\.py:13: .*a slice's step must be a nonzero integer constant"):
        lower(k, ndim=2)


def test_a_name_bound_only_to_tuples_and_read_only_as_an_index_is_one_name_per_component(kernel):
    k = kernel("""
        def k(out, x):
            i = cuda.grid(1)
            pos = (i, 0)
            if i > 2:
                pos = (i - 1, 1)
            out[pos] = x[pos] * 2.0
        """)
    text = normal(k)
    assert "out[pos__0, pos__1] = x[pos__0, pos__1] * 2.0" in text
    assert "pos__0 = i - 1" in text and "pos = " not in text


def test_a_tuple_name_read_as_a_value_is_left_for_the_lowering(kernel):
    k = kernel("""
        def k(out, x):
            i = cuda.grid(1)
            pos = (i, 0)
            a, b = pos
            out[pos] = x[a, b]
        """)
    assert "out[pos] = x[a, b]" in normal(k)


def test_raise_is_dropped_as_an_assert_is(kernel):
    k = kernel("""
        class Bad(IndexError):
            pass

        def k(out, x):
            i = cuda.grid(1)
            if x[i] > 10.0:
                raise Bad
            out[i] = x[i]
        """)
    text = normal(k)
    assert "raise" not in text and "out[i] = x[i]" in text


def test_a_store_into_a_view_is_a_loop_of_element_stores_and_broadcasting_is_refused(kernel):
    from harness.engine.ir.ssa import Loop, Store
    k = kernel("""
        def k(out, x):
            out[1:3] = x[0, 2:4]
        """)
    body = statements(lower(k, ndim=2))
    assert sum(isinstance(s, Loop) for s in body) == 1
    assert [s.array for s in body if isinstance(s, Store)] == ["out"]
    k = kernel("""
        def k(out, x):
            out[1:3] = x
        """)
    with pytest.raises(UnsupportedError, match=r"dialect_\d+\.py:9: .*storing an array of 2 dimension\(s\) into a view of 1: numba refuses it too"):
        lower(k, ndim=2)


def test_cbrt_calls_libdevice_and_the_primal_is_generated(kernel):
    from harness.engine.emission.codegen import Signature, function_text
    from harness.engine.rules.libm import primal_needs_engine
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.ir.ssa import Param
    k = kernel("""
        def k(out, x):
            out[0] = math.cbrt(x[0])
        """)
    for dtype, helper in (("float32", "cbrt_f32"), ("float64", "cbrt_f64")):
        ir = lower(k, dtype=dtype)
        _, text = function_text(ir, "primal", Signature({"out": "const", "x": "const"}), set())
        assert "from numba.cuda.libdevice import cbrt as cbrt_f64, cbrtf as cbrt_f32" in text
        assert f"{helper}(" in text.split("def k__primal")[1]
    params = [Param("out", "array", "float64", 1), Param("x", "array", "float64", 1)]
    assert primal_needs_engine(parse_kernel(k), params)
    plain = kernel("""
        def k(out, x):
            out[0] = math.sqrt(x[0])
        """)
    assert not primal_needs_engine(parse_kernel(plain), params)


@pytest.mark.parametrize("construct, words", [
    ("l = [x[0], x[1]]", "a list"), ("d = {0: x[0]}", "a dict"),
    ("v = sum(t for t in range(3))", "a generator expression"), ("del i", "`del`"),
])
def test_constructs_numba_refuses_say_so(kernel, construct, words):
    k = kernel(f"""
        def k(out, x):
            i = 0
            {construct}
            out[0] = x[0]
        """)
    with pytest.raises(UnsupportedError, match=rf":10: {words} cannot be compiled by numba\.cuda itself"):
        lower(k)


@pytest.mark.parametrize("dtype, words", [("float128x", r"the array dtype `float128x` is not defined"),
                                          ("'floatx'", r"unknown dtype 'floatx'")])
def test_an_undefined_or_unknown_shared_dtype_is_refused_at_its_line(kernel, dtype, words):
    k = kernel(f"""
        def k(out, x):
            sm = cuda.shared.array(32, {dtype})
            sm[0] = x[0]
            out[0] = sm[0]
        """)
    with pytest.raises(UnsupportedError, match=rf":9: {words}"):
        lower(k)


def test_translator_api_resolves_constants_and_dtypes(kernel):
    from harness.engine.frontend.source import constant, dtype, parse_kernel
    k = kernel("""
        def k(out, x):
            n = 3
            out[0] = TPB * 2 + n
        """)
    src = parse_kernel(k)
    expr = src.tree.body[-1].value
    assert constant(src, expr.left) == 64 and constant(src, expr) is None
    assert constant(src, ast.parse("(TPB, 32 + 2)", mode="eval").body) == (32, 34)
    for spelling, name in (("numba.float32", "float32"), ("np.float64", "float64"), ("'int32'", "int32"),
                           ("types.float64", "float64"), ("float32", "float32"), ("math.pi", None)):
        assert dtype(src, ast.parse(spelling, mode="eval").body) == name, spelling


def test_module_tuples_module_arrays_lambdas_and_named_rows(kernel):
    from harness.engine.ir.ssa import Alloc, Load, Store
    k = kernel("""
        SIZE = (2, TPB)
        W = np.array([1.5, -2.0])
        add = cuda.jit(device=True)(lambda a, b: a + b)   # noqa: E731

        def k(out, x):
            sm = cuda.shared.array(SIZE, float32)
            row = sm[1, :]
            row[0] = x[0] * W[1]
            out[0] = add(row[0], W[0])
        """)
    text = normal(k)
    assert text.startswith("def k(out, x):\n    W = cuda.local.array(2, 'float64')\n    W[0] = 1.5\n    W[1] = -2.0")
    assert "sm = cuda.shared.array((2, 32), 'float32')" in text
    stmts = statements(lower(k))
    allocs = [(s.array.name, s.array.kind, s.array.shape) for s in stmts if isinstance(s, Alloc)]
    assert allocs == [("W", "local", (2,)), ("sm", "shared", (2, 32))]
    row_store = [s for s in stmts if isinstance(s, Store) and s.array == "sm"]
    assert [tuple(getattr(a, "value", a) for a in s.index) for s in row_store] == [(1, 0)]
    assert any(isinstance(s.expr, Load) and s.expr.array == "sm" for s in stmts if hasattr(s, "expr"))


def test_a_lambda_inside_a_longer_expression_is_refused_not_crashed(kernel):
    from harness.engine.frontend.source import parse_kernel
    k = kernel("""
        pair = (cuda.jit(device=True)(lambda a: a + 1.0),
                cuda.jit(device=True)(lambda a: a * 2.0))

        def k(out, x):
            out[0] = x[0]
        """, name="pair")
    with pytest.raises(UnsupportedError, match="is not a plain function definition"):
        parse_kernel(k[1])


# ----------------------------------------------------------------------------- inner functions

def _reverse_and_forward(backend, k, x, *scalars):
    """(primal out, reverse dx for dout = 1, forward dout for dx = 1) of k(out, x, *scalars) on 8 threads."""
    import numpy as np
    from harness.core.activity import Duplicated
    from harness.engine.runtime.launch import Engine, LaunchConfig
    engine = Engine(backend)
    out = lambda: backend.asarray(np.zeros_like(x))                  # noqa: E731
    ones = lambda: backend.asarray(np.ones_like(x))                  # noqa: E731
    args = (Duplicated(out(), ones()), Duplicated(backend.asarray(x), out())) + scalars
    engine.launch(k, LaunchConfig.of(1, 8), *args, mode="reverse")
    fwd = (Duplicated(out(), out()), Duplicated(backend.asarray(x), ones())) + scalars
    engine.launch(k, LaunchConfig.of(1, 8), *fwd, mode="forward")
    host = lambda a: np.array(backend.to_host(a))                    # noqa: E731
    return host(fwd[0].value), host(args[1].shadow), host(fwd[0].shadow)


def test_inner_functions_read_the_enclosing_names_when_called(kernel, launching_backend):
    """Late binding, as Python and numba.cuda both do: `a` rebound between the def and the second call
    is seen with its new value; an inner function called from another one sees the kernel's `a`, not
    the caller's local of the same name; a constant default fills a missing argument."""
    import numpy as np
    k = kernel("""
        @cuda.jit
        def k(out, x):
            i = cuda.grid(1)
            a = 2.0

            def scaled(t):
                return a * t

            def offset(t, shift=TPB / 8):
                a = 10.0
                return scaled(t) + a + shift
            first = scaled(x[i])
            a = 3.0
            out[i] = first + scaled(x[i]) + offset(x[i])
        """)
    x = np.linspace(0.5, 1.5, 8)
    primal, dx, dout = _reverse_and_forward(launching_backend, k, x)
    np.testing.assert_allclose(primal, 2 * x + 3 * x + 3 * x + 10.0 + 4.0)
    np.testing.assert_allclose(dx, 8.0)
    np.testing.assert_allclose(dout, 8.0)


@pytest.mark.parametrize("definition, line, words", [
    (["@cuda.jit(device=True)", "def f(t):", "    return t"], 10, "inner function f is decorated"),
    (["def f(t, s=x[0]):", "    return t * s"], 9, "a default value of inner function f is not a constant"),
    (["def f(t, *s):", "    return t"], 9, r"inner function f takes \*args"),
    (["def f(t):", "    nonlocal i", "    return t"], 10, "`nonlocal` in inner function f: writes to the enclosing"),
])
def test_inner_functions_numba_cannot_inline_are_refused_at_their_line(kernel, definition, line, words):
    k = kernel("def k(out, x):\n    i = 0\n" + "".join(f"    {line}\n" for line in definition)
               + "    out[0] = f(x[0])\n")
    with pytest.raises(UnsupportedError, match=rf"dialect_\d+\.py:{line}: {words}"):
        lower(k)


def test_an_inner_function_used_as_a_value_is_refused(kernel):
    k = kernel("""
        def k(out, x):
            def f(t):
                return t
            g = f
            out[0] = g(x[0])
        """)
    with pytest.raises(UnsupportedError, match=r":11: inner function f used as a value"):
        lower(k)


# ----------------------------------------------------------------------------- loop counters after the loop

@pytest.mark.parametrize("n", [0, 3])
def test_a_counter_rebinding_a_name_keeps_its_last_value_after_the_loop(kernel, launching_backend, n):
    """Python's meaning: after `for k in range(n)` the name holds the last value, or, when the loop ran
    no iteration, the value it had before; inside a while loop whose body reassigns the same names
    the counters are carried like any other name."""
    import numpy as np
    k = kernel("""
        @cuda.jit
        def k(out, x, n):
            i = cuda.grid(1)
            k = i
            m = i
            for k in range(n):
                pass
            j = 0
            while j < 1:
                j += 1
                for m in range(n):
                    for m in range(k + 1):
                        pass
            out[i] += x[k] * 2.0 + x[m]
        """)
    x = np.linspace(0.5, 1.5, 8)
    primal, dx, dout = _reverse_and_forward(launching_backend, k, x, np.int64(n))
    lane = np.arange(8)
    last_k = lane if n == 0 else np.full(8, n - 1)
    last_m = lane if n == 0 else last_k
    np.testing.assert_allclose(primal, 2 * x[last_k] + x[last_m])
    want_dx = np.zeros(8)
    np.add.at(want_dx, last_k, 2.0)
    np.add.at(want_dx, last_m, 1.0)
    np.testing.assert_allclose(dx, want_dx)
    np.testing.assert_allclose(dout, 3.0)


def test_a_shape_held_in_a_name_is_read_as_the_shape(kernel):
    k = kernel("""
        def k(out, x):
            s = x.shape
            rows, cols = s
            out[0] = s[1] + len(s) + rows + cols
        """)
    assert normal(k) == ("def k(out, x):\n    rows, cols = (x.shape[0], x.shape[1])\n"
                         "    out[0] = x.shape[1] + x.ndim + rows + cols")
    lower(k, ndim=2)


def test_a_shape_name_bound_twice_is_left_as_written(kernel):
    k = kernel("""
        def k(out, x):
            s = x.shape
            if x[0] > 0:
                s = out.shape
            out[0] = s[0]
        """)
    assert "s = x.shape" in normal(k)


def test_a_shared_array_declared_after_an_early_return_moves_to_the_top(kernel):
    k = kernel("""
        def k(out, x):
            i = cuda.grid(1)
            if i >= 64:
                return
            sm = cuda.shared.array(TPB, float32)
            sm[0] = x[i]
            out[i] = sm[0]
        """)
    assert normal(k).startswith("def k(out, x):\n    sm = cuda.shared.array(32, 'float32')\n    i = cuda.grid(1)")
    lower(k)


@pytest.mark.parametrize("n", [2, 6])
def test_loop_else_blocks_run_when_the_loop_ends_without_break(kernel, launching_backend, n):
    """for/while ... else, as numba.cuda compiles them: the else block runs unless a break ended the loop."""
    import numpy as np
    k = kernel("""
        @cuda.jit
        def k(out, x, n):
            i = cuda.grid(1)
            acc = 0.0
            for j in range(n):
                if j == 4:
                    break
                acc += x[(i + j) % 8]
            else:
                acc *= 3.0
            for j in range(n):
                acc += 0.5 * x[i]
            else:
                acc += x[i]
            j = 0
            while j < n:
                j += 1
                if j > 10:
                    break
            else:
                acc *= 2.0
            out[i] = acc
        """)
    x = np.linspace(0.5, 1.5, 8)
    primal, dx, dout = _reverse_and_forward(launching_backend, k, x, np.int64(n))
    lane = np.arange(8)
    first = sum(x[(lane + j) % 8] for j in range(min(n, 4))) * (3.0 if n <= 4 else 1.0)
    want = 2.0 * (first + 0.5 * n * x + x)
    np.testing.assert_allclose(primal, want)
    jac = np.zeros((8, 8))
    for t in lane:
        for j in range(min(n, 4)):
            jac[t, (t + j) % 8] += (3.0 if n <= 4 else 1.0) * 2.0
        jac[t, t] += 2.0 * (0.5 * n + 1.0)
    np.testing.assert_allclose(dx, jac.sum(axis=0))
    np.testing.assert_allclose(dout, jac.sum(axis=1))


@pytest.mark.parametrize("where", ["if", "loop"])
def test_an_inner_function_defined_in_a_branch_or_loop_is_refused_when_called_after_it(kernel, where):
    """Which definition (if any) a call after the block runs depends on the path taken: refused,
    naming the call and the definition; a call inside the same block is lowered."""
    head = "if i > 3:" if where == "if" else "for j in range(i):"
    k = kernel(f"""
        def k(out, x):
            i = cuda.grid(1)
            def f(t):
                return t * 3.0
            {head}
                def f(t):
                    return t * 2.0
                out[i] = f(x[i])
            out[i] += f(x[i])
        """)
    with pytest.raises(UnsupportedError, match=r":16: inner function f is defined inside a branch or loop \(line 13\)"):
        lower(k)


def test_a_break_in_a_nested_loops_else_block_ends_the_enclosing_loop(kernel, launching_backend):
    """`for ...: for ...: ... else: break`: the else block belongs to the inner loop, its break to the
    outer one (numba.cuda and Python agree)."""
    import numpy as np
    k = kernel("""
        @cuda.jit
        def k(out, x, n):
            i = cuda.grid(1)
            acc = 0.0
            for j in range(n):
                for m in range(j):
                    if m > 5:
                        break
                else:
                    if j >= 2:
                        break
                acc += x[(i + j) % 8]
            out[i] = acc
        """)
    x = np.linspace(0.5, 1.5, 8)
    primal, dx, dout = _reverse_and_forward(launching_backend, k, x, np.int64(6))
    lane = np.arange(8)
    np.testing.assert_allclose(primal, x[lane] + x[(lane + 1) % 8])
    np.testing.assert_allclose(dx, 2.0)
    np.testing.assert_allclose(dout, 2.0)
