"""The AD transform's outputs: the SSA form, the index-ownership analysis, and the generated
forward and reverse kernels (their atomics, stores and reductions), the content-hashed cache of
generated files, and the UnsupportedError messages (file and exact line) for refused constructs.

Sources are produced the way a launch produces them (Engine.prepare), then read back and parsed:
assertions look at the generated code's structure (calls, stores), not at its formatting.
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pytest

from harness.core.errors import UnsupportedError

KERNELS_FILE = Path(__file__).resolve().parents[1] / "kernels_for_tests.py"
ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- helpers

def _params(**kinds):
    """_params(out=("array", 1), a="scalar") -> [Param, ...] in keyword order, float64."""
    from harness.engine.ir.ssa import Param
    out = []
    for name, kind in kinds.items():
        if kind == "scalar":
            out.append(Param(name, "scalar", "float64"))
        else:
            out.append(Param(name, "array", "float64", kind[1]))
    return out


def _lower(kernel, **kinds):
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.frontend.normalize import lower_kernel
    return lower_kernel(parse_kernel(kernel), _params(**kinds))


def ssa_problems(ir) -> list[str]:
    """The engine's IR verifier (harness/engine/ir/verify.py), which the pipeline runs between passes
    in debug runs."""
    from harness.engine.ir.verify import ssa_problems as problems
    return problems(ir)


def _array(backend, shape, fill=0.0):
    return backend.asarray(np.full(shape, fill, dtype=np.float64))


def _dup(backend, shape, fill=0.0, cls=None):
    from harness.core.activity import Duplicated
    return (cls or Duplicated)(_array(backend, shape, fill), _array(backend, shape))


def generated(engine, kernel, config, args, mode) -> tuple[str, ast.FunctionDef]:
    """(source text, the kernel's FunctionDef) of the `mode` kernel the engine generates."""
    plan, _ = engine.prepare(kernel, config, args, mode)
    assert plan.source_path, f"no generated source for {mode}"
    text = Path(plan.source_path).read_text()
    fdefs = [n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
    kdef = [f for f in fdefs if f.name.endswith(f"__{mode}")]
    assert len(kdef) == 1, [f.name for f in fdefs]
    return text, kdef[0]


def atomic_adds(fdef) -> list[tuple[str, str]]:
    """(array, index text) of every cuda.atomic.add in a function."""
    out = []
    for node in ast.walk(fdef):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "cuda.atomic.add":
            out.append((ast.unparse(node.args[0]), ast.unparse(node.args[1])))
    return out


def stores_to(fdef, array: str) -> list[str]:
    """Index texts of plain assignments `array[...] = ...` (not +=) in a function."""
    out = []
    for node in ast.walk(fdef):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == array:
                    out.append(ast.unparse(t.slice))
    return out


def augmented_to(fdef, array: str) -> list[str]:
    out = []
    for node in ast.walk(fdef):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) \
                and isinstance(node.target.value, ast.Name) and node.target.value.id == array:
            out.append(ast.unparse(node.target.slice))
    return out


@pytest.fixture
def cfg():
    from harness.engine.runtime.launch import LaunchConfig
    return LaunchConfig


# ----------------------------------------------------------------------------- the SSA form

@pytest.mark.parametrize("name, kinds", [
    ("branches", dict(out=("array", 1), x=("array", 1), lo="scalar")),
    ("early_exit", dict(out=("array", 1), x=("array", 1))),
    ("arith_family", dict(out=("array", 2), x=("array", 1), y=("array", 1))),
    ("stencil3", dict(out=("array", 1), x=("array", 1))),
    ("grid2_owned", dict(out=("array", 2), x=("array", 2))),
    ("axpy", dict(out=("array", 1), a="scalar", x=("array", 1), y=("array", 1))),
])
def test_lowering_is_valid_ssa(kernels, name, kinds):
    problems = ssa_problems(_lower(getattr(kernels, name), **kinds))
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_ssa_checker_catches_a_reused_name(kernels):
    """The checker above can fail: rename one assignment onto another's name."""
    from harness.engine.ir.ssa import Assign, walk
    ir = _lower(kernels.branches, out=("array", 1), x=("array", 1), lo="scalar")
    assigns = [s for s in walk(ir.body) if isinstance(s, Assign)]
    assigns[-1].target = assigns[0].target
    assert any("assigned 2 times" in p for p in ssa_problems(ir))


def test_if_join_has_phis_for_values_changed_in_a_branch(kernels):
    from harness.engine.ir.ssa import Assign, If, Lit, Prim, walk
    ir = _lower(kernels.branches, out=("array", 1), x=("array", 1), lo="scalar")
    inner = [s for s in walk(ir.body) if isinstance(s, If) and s.phis]
    assert len(inner) == 1, "one if/else join with phis (the `if v > lo` statement)"
    join = inner[0]
    by_base = {re.sub(r"_\d+$", "", t): (t, a, b) for t, a, b in join.phis}
    assert set(by_base) == {"r", "s"}, join.phis
    # r: v * v on the then-side, lo * v on the else-side
    defs = {s.target: s.expr for s in walk(ir.body) if isinstance(s, Assign)}
    _, r_then, r_else = by_base["r"]
    assert isinstance(defs[r_then], Prim) and defs[r_then].op == "mul" and "lo" not in defs[r_then].args
    assert isinstance(defs[r_else], Prim) and defs[r_else].op == "mul" and "lo" in defs[r_else].args
    # s: updated on the then-side only; the else-side keeps the value from before the if
    _, s_then, s_else = by_base["s"]
    assert defs[s_then].op == "add" and Lit(1.0) in defs[s_then].args
    inside = {s.target for s in _all(join.body) + _all(join.orelse) if isinstance(s, Assign)}
    block = next(s.body for s in _all(ir.body) if isinstance(s, If) and join in s.body)
    before, after = block[:block.index(join)], block[block.index(join) + 1:]
    assert s_else not in inside and s_else in {s.target for s in before if isinstance(s, Assign)}
    # the code after the if uses the join's results, never a branch's own values
    used_after = {a for s in _all(after) if isinstance(s, Assign) and isinstance(s.expr, Prim) for a in s.expr.args}
    assert {by_base["r"][0], by_base["s"][0]} <= used_after
    assert not used_after & inside


def _all(stmts) -> list:
    from harness.engine.ir.ssa import walk
    return list(walk(stmts))


def test_early_return_becomes_a_live_flag(kernels):
    from harness.engine.ir.ssa import Assign, If, Lit, Prim, Store
    from harness.engine.frontend.normalize import LIVE as FLAG
    LIVE = FLAG.replace("!", "_")            # the flag's name in generated code
    ir = _lower(kernels.early_exit, out=("array", 1), x=("array", 1))
    first = ir.body[0]
    assert isinstance(first, Assign) and first.target == LIVE and first.expr == Prim("copy", (Lit(True),))
    clears = [s for s in _all(ir.body) if isinstance(s, Assign) and s.target.startswith(LIVE)
              and s.expr == Prim("copy", (Lit(False),))]
    assert len(clears) == 2, "one `_live = False` per return statement"
    joins = [t for s in _all(ir.body) if isinstance(s, If) for t, _, _ in s.phis]
    assert all(t.startswith(LIVE) for t in joins), f"only the flag is joined: {joins}"
    guards = [s for s in _all(ir.body) if isinstance(s, If) and isinstance(s.cond, str) and s.cond in joins]
    assert len(guards) == 2, "the code after each early return is guarded by the joined flag"
    # the final store out[i] = v * v runs only under both guards, the other store under the first
    stores = [s for s in _all(ir.body) if isinstance(s, Store)]
    assert len(stores) == 2
    assert all(st in _all(guards[0].body) for st in stores)
    assert [st for st in stores if st in _all(guards[1].body)] == [stores[1]]
    assert not ssa_problems(ir)


def test_kernel_without_early_return_has_no_live_flag(kernels):
    from harness.engine.ir.ssa import Assign
    from harness.engine.frontend.normalize import LIVE
    ir = _lower(kernels.branches, out=("array", 1), x=("array", 1), lo="scalar")
    assert not [s for s in _all(ir.body) if isinstance(s, Assign) and s.target.startswith(LIVE)]


def test_early_return_derivatives(kernels, engine, launching_backend, cfg):
    """out[i] = x^2 for x >= 0, 0 for x < 0 and nothing past the array: forward and reverse agree."""
    from harness.core.activity import Duplicated
    be = launching_backend
    x = np.array([-1.5, -0.5, 0.5, 1.5, 2.0, -2.0])
    n = x.size
    out, dout, dx = be.asarray(np.zeros(n)), be.asarray(np.zeros(n)), be.asarray(np.ones(n))
    engine.launch(kernels.early_exit, cfg.threads(8, 8), Duplicated(out, dout), Duplicated(be.asarray(x), dx),
                  mode="forward")
    np.testing.assert_allclose(be.to_host(out), np.where(x < 0, 0.0, x * x))
    np.testing.assert_allclose(be.to_host(dout), np.where(x < 0, 0.0, 2 * x))
    out, dout, dx = be.asarray(np.zeros(n)), be.asarray(np.ones(n)), be.asarray(np.zeros(n))
    engine.launch(kernels.early_exit, cfg.threads(8, 8), Duplicated(out, dout), Duplicated(be.asarray(x), dx),
                  mode="reverse")
    np.testing.assert_allclose(be.to_host(dx), np.where(x < 0, 0.0, 2 * x))
    np.testing.assert_allclose(be.to_host(dout), 0.0)


# ----------------------------------------------------------------------------- index ownership

def _owned(kernel, dims, **kinds):
    from harness.engine.analyses.ownership import LaunchShape, owned_arrays
    return owned_arrays(_lower(kernel, **kinds), LaunchShape(dims))


ONE_D = dict(out=("array", 1), x=("array", 1))
TWO_D = dict(out=("array", 2), x=("array", 2))


@pytest.mark.parametrize("name, dims, kinds, owned", [
    ("axpy", (0,), dict(out=("array", 1), a="scalar", x=("array", 1), y=("array", 1)), {"out", "x", "y"}),
    ("read_first", (0,), ONE_D, {"out"}),
    ("stencil3", (0,), ONE_D, {"out"}),
    ("manual_global_index", (0,), ONE_D, {"out", "x"}),
    ("thread_index_only", (0,), ONE_D, set()),
    ("affine_index", (0,), ONE_D, {"out", "x"}),
    ("halved_index", (0,), ONE_D, {"out"}),
    ("grid2_owned", (0, 1), TWO_D, {"out", "x"}),
    ("grid2_transposed", (0, 1), TWO_D, {"out", "x"}),
    ("grid2_diagonal", (0, 1), TWO_D, {"out"}),
    ("grid2_row_index", (0, 1), ONE_D, set()),
    ("grid1_in_2d", (0, 1), ONE_D, set()),
    ("grid1_in_2d", (0,), ONE_D, {"out", "x"}),
    ("grid2_owned", (0,), TWO_D, {"out", "x"}),   # i, j = cuda.grid(2) in a 1-D launch: j is always 0
    ("grid2_diagonal", (0,), TWO_D, {"out"}),      # x[i, i]: conservative, i twice
    ("grid2_owned", (), TWO_D, {"out", "x"}),     # a single thread owns everything
])
def test_owned_arrays(kernels, name, dims, kinds, owned):
    got = _owned(getattr(kernels, name), dims, **kinds)
    assert got == owned, f"{name} in launch dims {dims}: owned {sorted(got)}, expected {sorted(owned)}"


def test_block_times_dim_plus_thread_is_the_global_index(kernels):
    from harness.engine.analyses.ownership import affine_forms
    from harness.engine.ir.ssa import Assign, Load, walk as ir_walk
    ir = _lower(kernels.manual_global_index, **ONE_D)
    forms = affine_forms(ir)
    loads = [s for s in ir_walk(ir.body) if isinstance(s, Assign) and isinstance(s.expr, Load)]
    assert loads and all(forms[s.expr.index[0]] == {"gx": 1} for s in loads), \
        [forms[s.expr.index[0]] for s in loads]
    ir = _lower(kernels.affine_index, **ONE_D)
    forms = affine_forms(ir)
    x_index = [s.expr.index[0] for s in ir_walk(ir.body) if isinstance(s, Assign) and isinstance(s.expr, Load)]
    assert [forms[a] for a in x_index] == [{"gx": 2, "1": 1}]


# ----------------------------------------------------------------------------- generated kernels

def test_reverse_of_thread_owned_elementwise_kernel_has_no_array_atomics(kernels, engine, backend, cfg):
    from harness.core.activity import Const
    args = [_dup(backend, 16), Const(1.5), _dup(backend, 16), _dup(backend, 16)]
    _, fdef = generated(engine, kernels.axpy, cfg.threads(16, 8), args, "reverse")
    assert atomic_adds(fdef) == []
    # each owned shadow is read once up front (prefetched) and written back with a plain store
    text = ast.unparse(fdef)
    for shadow in ("d_x", "d_y", "d_out"):
        reads = re.findall(rf"(_pf\d+) = {shadow}\[i\]", text)
        assert len(reads) == 1, (shadow, text)
    assert re.search(r"d_x\[i\] = _pf\d+ \+ ", text) and re.search(r"d_y\[i\] = _pf\d+ \+ ", text), text
    reg = re.search(r"(_pf\d+) = d_x\[i\]", text).group(1)
    first_store = text.index("d_out[i] = 0")
    assert text.index(f"{reg} = d_x[i]") < first_store, "all shadow loads are issued before any shadow store"


def test_all_threads_reading_x0_accumulate_without_per_thread_atomics(kernels, engine, backend, cfg):
    _, fdef = generated(engine, kernels.read_first, cfg.threads(16, 8), [_dup(backend, 16), _dup(backend, 1)],
                        "reverse")
    adds = atomic_adds(fdef)
    assert [a for a in adds if a[0] in ("d_out", "d_x")] == [], "x[0]'s adjoint goes through the spread slots"
    assert augmented_to(fdef, "d_x") == [], "added once, by the finish kernel"


def test_stencil_gathers_x_without_atomics(kernels, backend, cfg):
    """x is read at three offsets of the thread index: with the gather on, thread j gathers dx[j]
    (tests/engine/test_gather.py)."""
    from harness.engine.runtime.launch import Engine, EngineOptions
    engine = Engine(backend, EngineOptions(gather_stencils=True))
    _, fdef = generated(engine, kernels.stencil3, cfg.threads(16, 8), [_dup(backend, 16), _dup(backend, 16)],
                        "reverse")
    assert atomic_adds(fdef) == []
    assert stores_to(fdef, "d_x") == ["_gj"], "each thread writes its own element's sum (read first)"
    assert augmented_to(fdef, "d_x") == ["_ge"], "and adds into elements beyond the thread count"


def test_stencil_atomics_for_x_only(kernels, engine, backend, cfg):
    """Without the gather (the default), three index forms for x: atomics on x only."""
    _, fdef = generated(engine, kernels.stencil3, cfg.threads(16, 8), [_dup(backend, 16), _dup(backend, 16)],
                        "reverse")
    adds = atomic_adds(fdef)
    x_indices = [idx for arr, idx in adds if arr == "d_x"]
    assert len(x_indices) == 3 and len(set(x_indices)) == 3, f"three index forms for x: {adds}"
    assert [a for a in adds if a[0] != "d_x"] == []
    assert augmented_to(fdef, "d_x") == []


@pytest.mark.parametrize("name, grid, block, atomic_arrays", [
    ("grid2_owned", (2, 2), (4, 4), set()),
    ("grid2_transposed", (2, 2), (4, 4), set()),
    ("grid2_diagonal", (2, 2), (4, 4), {"d_x"}),
])
def test_grid2_reverse_atomics(kernels, engine, backend, cfg, name, grid, block, atomic_arrays):
    args = [_dup(backend, (8, 8)), _dup(backend, (8, 8))]
    _, fdef = generated(engine, getattr(kernels, name), cfg.of(grid, block), args, "reverse")
    assert {a for a, _ in atomic_adds(fdef)} == atomic_arrays


def test_one_d_index_in_a_two_d_launch_is_atomic(kernels, engine, backend, cfg):
    args = [_dup(backend, 8), _dup(backend, 8)]
    _, fdef = generated(engine, kernels.grid2_row_index, cfg.of((2, 2), (4, 4)), args, "reverse")
    assert ("d_x", "i") in atomic_adds(fdef)
    _, fdef = generated(engine, kernels.grid1_in_2d, cfg.of((2, 2), (4, 4)), args, "reverse")
    assert ("d_x", "i") in atomic_adds(fdef)
    _, fdef = generated(engine, kernels.grid1_in_2d, cfg.of(2, 4), args, "reverse")
    assert atomic_adds(fdef) == []


def test_thread_index_alone_is_not_owned_across_blocks(kernels, engine, backend, cfg):
    args = [_dup(backend, 8), _dup(backend, 8)]
    _, fdef = generated(engine, kernels.thread_index_only, cfg.of(2, 4), args, "reverse")
    assert [a for a, _ in atomic_adds(fdef)] == ["d_x"]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_duplicated_no_need_output_is_not_stored(kernels, engine, backend, cfg, mode):
    from harness.core.activity import DuplicatedNoNeed
    config = cfg.threads(8, 8)
    _, fdef = generated(engine, kernels.square_into, config,
                        [_dup(backend, 8, cls=DuplicatedNoNeed), _dup(backend, 8)], mode)
    assert stores_to(fdef, "out") == [], "DuplicatedNoNeed output never read: no primal store"
    assert stores_to(fdef, "d_out"), "its shadow is still written"
    _, fdef = generated(engine, kernels.square_into, config, [_dup(backend, 8), _dup(backend, 8)], mode)
    assert stores_to(fdef, "out") == ["i"], "Duplicated output: the primal is stored"


def test_duplicated_no_need_array_that_is_read_is_still_stored(kernels, engine, backend, cfg):
    from harness.core.activity import DuplicatedNoNeed
    _, fdef = generated(engine, kernels.square_first, cfg.of(1, 1), [_dup(backend, 1, 3.0, DuplicatedNoNeed)],
                        "reverse")
    assert stores_to(fdef, "A") == ["0"]


def test_active_scalar_is_reduced_hierarchically_with_one_atomic_per_block(kernels, engine, backend, cfg):
    from harness.core.activity import Active
    args = [_dup(backend, 16), Active(2.0), _dup(backend, 16)]
    _, fdef = generated(engine, kernels.scale, cfg.threads(16, 8), args, "reverse")
    adds = atomic_adds(fdef)
    assert len(adds) == 1 and adds[0][1] == "0" and adds[0][0].endswith("active_out"), adds
    text = ast.unparse(fdef)
    assert text.count("cuda.shfl_xor_sync(_m, _v0,") == 15, \
        "butterflies over 32 lanes: the warps (full and partial) and warp 0 over the warps' sums"
    assert "_red = cuda.shared.array((1, 32), float64)" in text
    # the block's single atomic is issued by thread 0, after the warps' sums meet at a barrier
    guard = [s for s in fdef.body if isinstance(s, ast.If) and ast.unparse(s.test) == "_tlin == (0 if _full else 0 % _nthreads)"]
    assert len(guard) == 1 and "cuda.atomic.add" in ast.unparse(guard[0])
    top = [ast.unparse(s) for s in fdef.body]
    assert top.index("cuda.syncthreads()") < top.index(ast.unparse(guard[0])), "reduction outside every branch"
    params = [a.arg for a in fdef.args.args]
    assert params[-4:] == [adds[0][0], "_vgx", "_vgy", "_vgz"], \
        "the adjoint buffer is the last kernel parameter before the real grid of the coarsened kernel (coarsen.py)"


def test_several_sums_are_reduce_scattered_over_a_full_warp(kernels, engine, backend, cfg):
    """Four sums (a batch of four lanes of one Active scalar) over full warps take 3 + 3 shuffles,
    each lane keeping half its sums per step; sum k is written by lane 8k."""
    from harness.core.activity import Active, BatchDuplicated
    batch = lambda: BatchDuplicated(_array(backend, 64), tuple(_array(backend, 64) for _ in range(4)))  # noqa: E731
    _, fdef = generated(engine, kernels.scale, cfg.threads(64, 32), [batch(), Active(2.0), batch()], "reverse")
    full = next(s for s in ast.walk(fdef) if isinstance(s, ast.If) and ast.unparse(s.test) == "_full")
    body = ast.unparse(ast.Module(body=full.body, type_ignores=[]))
    assert body.count("cuda.shfl_xor_sync(") == 2 + 1 + 3, body
    assert "if cuda.laneid % 8 == 0 and cuda.laneid // 8 < 4:" in body
    partial = ast.unparse(ast.Module(body=full.orelse, type_ignores=[]))
    assert partial.count("cuda.shfl_xor_sync(") == 4 * 5, "the masked butterfly, once per sum"


def test_active_scalar_batch_reduces_each_lane(kernels, engine, backend, cfg):
    from harness.core.activity import Active, BatchDuplicated
    batch = lambda: BatchDuplicated(_array(backend, 16), (_array(backend, 16), _array(backend, 16)))  # noqa: E731
    _, fdef = generated(engine, kernels.scale, cfg.threads(16, 8), [batch(), Active(2.0), batch()], "reverse")
    assert sorted(idx for _, idx in atomic_adds(fdef)) == ["0", "1"]


def test_forward_kernel_has_no_atomics_and_writes_tangents(kernels, engine, backend, cfg):
    from harness.core.activity import Active
    args = [_dup(backend, 16), Active(2.0), _dup(backend, 16)]
    _, fdef = generated(engine, kernels.scale, cfg.threads(16, 8), args, "forward")
    assert atomic_adds(fdef) == []
    assert stores_to(fdef, "d_out") == ["i"] and stores_to(fdef, "out") == ["i"]
    assert "d_alpha" in [a.arg for a in fdef.args.args], "forward mode takes the Active scalar's tangent"


def test_generated_source_compiles_as_python(kernels, engine, backend, cfg):
    text, _ = generated(engine, kernels.branches, cfg.threads(8, 8),
                        [_dup(backend, 8), _dup(backend, 8), 0.25], "reverse")
    compile(text, "generated", "exec")


# ----------------------------------------------------------------------------- the file cache

def test_generated_files_are_content_hashed_and_never_rewritten(kernels, backend, cfg, tmp_path, monkeypatch):
    from harness.core.activity import Active, Const
    from harness.engine.runtime.launch import Engine
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    args = [_dup(backend, 16), Active(2.0), _dup(backend, 16)]
    plan, _ = Engine(backend).prepare(kernels.scale, cfg.threads(16, 8), args, "reverse")
    path = Path(plan.source_path)
    assert path.parent == tmp_path
    content = path.read_bytes()
    digest = hashlib.sha256(content).hexdigest()[:16]
    assert re.fullmatch(rf"scale__reverse_{digest}\.py", path.name), path.name
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    plan2, _ = Engine(backend).prepare(kernels.scale, cfg.threads(16, 8), args, "reverse")   # fresh engine
    assert Path(plan2.source_path) == path
    assert path.stat().st_mtime_ns == 1_000_000_000, "an existing generated file was rewritten"
    assert path.read_bytes() == content
    assert not list(tmp_path.glob("*.tmp")), "no temporary files left behind"
    other = [_dup(backend, 16), Const(2.0), _dup(backend, 16)]
    plan3, _ = Engine(backend).prepare(kernels.scale, cfg.threads(16, 8), other, "reverse")
    assert Path(plan3.source_path) != path and Path(plan3.source_path).parent == tmp_path
    # besides the engine's two, the backend's copies for compiling (compile_log.shared_function)
    written = sorted(p.name for p in tmp_path.iterdir() if "__shared_" not in p.name)
    assert written == sorted([path.name, Path(plan3.source_path).name])


def test_plan_is_cached_in_memory_per_signature(kernels, engine, backend, cfg):
    from harness.core.activity import Active
    args = [_dup(backend, 16), Active(2.0), _dup(backend, 16)]
    p1, _ = engine.prepare(kernels.scale, cfg.threads(16, 8), args, "reverse")
    p2, _ = engine.prepare(kernels.scale, cfg.threads(16, 8), [_dup(backend, 16), Active(3.0), _dup(backend, 16)],
                           "reverse")
    assert p1 is p2, "same types and activities: same plan"
    p3, _ = engine.prepare(kernels.scale, cfg.threads(16, 8), args, "forward")
    assert p3 is not p1


# ----------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("name, marker, x_shape, words", [
    ("uses_try", "try", 4, r"try/except cannot be compiled by numba\.cuda itself"),
    ("uses_with", "with", 4, r"`with` block cannot be compiled by numba\.cuda itself"),
    ("uses_lambda", "lambda", 4, r"lambda|Lambda"),
    ("uses_global", "global", 4, r"`global` statement cannot be compiled by numba\.cuda itself"),
    ("uses_slice", "slice", 4, r"slice"),
    ("one_index_2d", "one-index", (4, 4), r"2 dimension.*indexed with 1"),
    ("calls_unknown", "unknown-call", 4, r"HELPER_OBJECT"),
    ("keyword_call", "keyword", 4, r"keyword"),
    ("returns_value", "return-value", 4, r"return a value"),
])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_unsupported_construct_names_file_and_line(kernels, engine, backend, cfg, mark_line,
                                                   name, marker, x_shape, words, mode):
    args = [_dup(backend, 4), _dup(backend, x_shape)]
    with pytest.raises(UnsupportedError) as info:
        engine.prepare(getattr(kernels, name), cfg.threads(4, 4), args, mode)
    err = info.value
    line = mark_line(marker)
    assert err.file is not None and Path(err.file).resolve() == KERNELS_FILE.resolve(), err.file
    assert err.line == line, f"{name}: error at line {err.line}, offending statement on line {line}: {err}"
    assert f"{err.file}:{line}:" in str(err), str(err)
    assert re.search(words, str(err)), f"message does not say what is refused: {err}"


def test_missing_derivative_rule_is_refused_at_its_line(engine, backend, cfg):
    from harness.cases.inputs import load_kernel
    kernel = load_kernel("kernels/elementwise.py:lgamma_map", ROOT)
    with pytest.raises(UnsupportedError, match=r"elementwise\.py:\d+: cannot differentiate `lgamma`") as info:
        engine.prepare(kernel, cfg.threads(4, 4), [_dup(backend, 4), _dup(backend, 4)], "reverse")
    src = Path(info.value.file).read_text().splitlines()
    assert "lgamma" in src[info.value.line - 1]


# ------------------------------------------------- kernel names that look like the engine's own


def test_local_named_like_a_temporary_prefix(kernels, engine, launching_backend, cfg):
    _check_forward(kernels.tmp_named_local, engine, launching_backend, cfg,
                   primal=lambda x: x * x, tangent=lambda x: 2 * x)


def test_locals_named_like_temporaries(kernels, engine, launching_backend, cfg):
    ir = _lower(kernels.temp_named_locals, **ONE_D)
    assert not ssa_problems(ir)
    _check_forward(kernels.temp_named_locals, engine, launching_backend, cfg,
                   primal=lambda x: 2 * x + 8, tangent=lambda x: 2 + 0 * x)


def test_local_named_live(kernels, engine, launching_backend, cfg):
    _check_forward(kernels.live_named_local, engine, launching_backend, cfg,
                   primal=lambda x: 2 * x, tangent=lambda x: 2 + 0 * x)


def _check_forward(kernel, engine, be, cfg, primal, tangent):
    from harness.core.activity import Duplicated
    x = np.linspace(0.5, 1.5, 4)
    out, dout = be.asarray(np.zeros(4)), be.asarray(np.zeros(4))
    engine.launch(kernel, cfg.threads(4, 4), Duplicated(out, dout), Duplicated(be.asarray(x), be.asarray(np.ones(4))),
                  mode="forward")
    np.testing.assert_allclose(be.to_host(out), primal(x), err_msg="primal result of the forward kernel")
    np.testing.assert_allclose(be.to_host(dout), tangent(x), err_msg="tangent")


def _block_guards(fdef):
    return [s for s in fdef.body if isinstance(s, ast.If) and ast.unparse(s.test) == "_tlin == 0"]


def test_reads_at_literal_indices_are_reduced_per_block(kernels, engine, backend, cfg):
    """every thread reads x[0]; its adjoint is summed in a register, reduced through
    the warp and the block, added by each block to one of SPREAD copies, and a one-thread finish kernel adds the copies to d_x[0] and zeroes them."""
    module, fdef = generated(engine, kernels.read_first, cfg.threads(16, 8), [_dup(backend, 16), _dup(backend, 1)],
                        "reverse")
    text = ast.unparse(fdef)
    assert re.search(r"_acc0_0 \+= ", text), text
    assert atomic_adds(fdef) == [("d_uniform_spread", "0 + _blin % 64")]
    assert [a.arg for a in fdef.args.args][-4:] == ["d_uniform_spread", "_vgx", "_vgy", "_vgz"]   # coarsen.py: the real grid
    finish = [n for n in ast.parse(module).body if isinstance(n, ast.FunctionDef) and n.name.endswith("_finish")]
    assert len(finish) == 1 and [a.arg for a in finish[0].args.args] == [a.arg for a in fdef.args.args]
    body = ast.unparse(finish[0])
    assert "d_x[0] += _s" in body and "d_uniform_spread[_c] = 0.0" in body, "folded once, scratch left zeroed"


def test_uniform_slots_sum_over_blocks_and_launches(kernels, engine, launching_backend, cfg):
    """Many blocks, two launches with the same bound scratch: d_x[0] gets every thread's share."""
    from harness.core.activity import Duplicated
    b = launching_backend
    n = 200
    out, dout = _array(b, n), b.asarray(np.arange(n, dtype=np.float64))
    x, dx = _array(b, 1, 2.0), _array(b, 1)
    bound = engine.bind(kernels.read_first, cfg.threads(n, 32), Duplicated(out, dout), Duplicated(x, dx),
                        mode="reverse")
    bound.launch()
    b.synchronize()
    first = float(b.to_host(dx)[0])
    assert first == pytest.approx(sum(i * float(i) for i in range(n)))
    dout2 = np.arange(n, dtype=np.float64)
    bound.kernel_args[1][...] = b.asarray(dout2) if not hasattr(bound.kernel_args[1], "copy_to_host") else dout2
    bound.launch()
    b.synchronize()
    assert float(b.to_host(dx)[0]) == pytest.approx(2 * first)


def test_read_of_a_written_array_keeps_its_atomic(kernels, engine, backend, cfg):
    """A[0] *= A[0]: the shadow is also consumed by the store, so a deferred sum would be wrong."""
    _, fdef = generated(engine, kernels.square_first, cfg.of(1, 1), [_dup(backend, 1, 3.0)], "reverse")
    assert _block_guards(fdef) == [] and "_acc" not in ast.unparse(fdef)


def test_uniform_slots_with_fewer_threads_per_block_than_slots(kernels, engine, launching_backend, cfg):
    """Four coefficient slots, one-thread blocks: every slot is still finished (by thread k % 1)."""
    from harness.core.activity import Const, Duplicated
    b = launching_backend
    n = 3
    x = b.asarray(np.array([0.5, 1.0, 2.0]))
    c, dc = _array(b, 4, 1.0), _array(b, 4)
    out, dout = _array(b, n), _array(b, n, 1.0)
    engine.launch(kernels.polynomial, cfg.threads(n, 1), Duplicated(out, dout), Const(x), Duplicated(c, dc),
                  mode="reverse")
    t = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(b.to_host(dc), [3.0, t.sum(), (t ** 2).sum(), (t ** 3).sum()])
