"""The engine's modules recurse through tables, not through imports of each other: lowering goes
through one dispatch table keyed by AST node type, and the only import cycle left among the emit
modules is the reverse sweep's own recursion (a loop's or branch's adjoint reverses its body)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.tools.module_map import cycles, import_graph

ROOT = Path(__file__).resolve().parents[2]
REVERSE_SWEEP = {"harness.engine.emission.emit_adjoints", "harness.engine.emission.emit_gather", "harness.engine.emission.emit_loops",
                 "harness.engine.emission.emit_reverse"}


def _engine_cycles() -> list[set[str]]:
    return [set(c) for c in cycles(import_graph(ROOT / "harness")) if any(".engine." in m for m in c)]


def test_no_lowering_module_is_in_an_import_cycle():
    assert [c for c in _engine_cycles() if any(".lower_" in m for m in c)] == []


def test_the_only_emit_cycle_is_the_reverse_sweeps_recursion():
    assert [c for c in _engine_cycles() if any(".emit_" in m for m in c)] == [REVERSE_SWEEP]


def test_the_cycle_finder_sees_a_cycle(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    from .a import x\n")
    assert [set(c) for c in cycles(import_graph(package))] == [{"pkg.a", "pkg.b"}]


def test_every_lowered_node_type_has_one_handler_in_the_table():
    from harness.engine.frontend import normalize  # noqa: F401  (registers the handlers)
    from harness.engine.frontend.lower_dispatch import LOWERERS, lowers
    statements = {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.If, ast.Expr, ast.Pass, ast.For, ast.While,
                  ast.Break, ast.Continue, ast.FunctionDef}
    expressions = {ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp,
                   ast.Subscript, ast.Attribute, ast.Call}
    assert set(LOWERERS) == statements | expressions
    with pytest.raises(ValueError, match="If already lowered by if_statement"):
        lowers(ast.If)(lambda st, node, out: None)
    assert LOWERERS[ast.If].__name__ == "if_statement"


def test_a_node_type_outside_the_table_is_refused_with_its_line():
    from harness.core.errors import UnsupportedError
    from harness.engine.frontend.source import parse_kernel
    from harness.engine.ir.ssa import Param
    from harness.engine.frontend.normalize import lower_kernel

    def kernel(out):
        with open("x"):
            out[0] = 1.0

    def lambda_kernel(out):
        out[0] = (lambda v: v)(1.0)

    params = [Param("out", "array", "float64", 1)]
    with pytest.raises(UnsupportedError, match="a `with` block cannot be compiled") as refused:
        lower_kernel(parse_kernel(kernel), params)
    assert f":{kernel.__code__.co_firstlineno + 1}" in str(refused.value)
    with pytest.raises(UnsupportedError, match="is not supported") as refused:
        lower_kernel(parse_kernel(lambda_kernel), params)
    assert f":{lambda_kernel.__code__.co_firstlineno + 1}" in str(refused.value)


def test_the_op_table_is_the_one_list_of_math_functions():
    """Each op once; what the front end, the rules, the translator, the adapters and the fuzzer
    read is the table's."""
    import math
    import string

    from harness.engine.frontend import source as frontend
    from harness.engine.rules import table as rules
    from harness.engine.rules.ops import BY_NAME, OPS
    from harness.adapters import taichi_adapter, translate, warp_adapter
    from harness.fuzz.grammar import PORTABLE_MATH
    assert len(BY_NAME) == len(OPS)
    for op in OPS:
        if op.math:
            assert callable(getattr(math, op.name, None)), op.name
            assert frontend.FUNCTIONS[id(getattr(math, op.name))] == op.name
        assert op.translated <= op.math, op.name          # the translator recognises `math.<name>` only
        for spelling in (op.warp, op.taichi):
            if spelling is not None:
                fields = {f for _, f, _, _ in string.Formatter().parse(spelling) if f}
                arity = len(op.partials) if op.partials else 1
                assert fields <= set(translate.MATH_CONSTANTS) | {str(k) for k in range(arity)}, (op.name, spelling)
    assert rules.PARTIALS == {op.name: op.partials for op in OPS if op.partials}
    assert warp_adapter.WarpTarget.math == {op.name: op.warp for op in OPS if op.warp}
    assert taichi_adapter.TaichiTarget.math == {op.name: op.taichi for op in OPS if op.taichi}
    assert set(translate.MATH_FUNCTIONS.values()) == {op.name for op in OPS if op.translated} | {"abs", "min", "max"}
    assert PORTABLE_MATH <= set(warp_adapter.WarpTarget.math) & set(taichi_adapter.TaichiTarget.math)
