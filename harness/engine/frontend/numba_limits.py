"""Constructs numba.cuda itself refuses in a kernel, so that the engine's refusal says so: such a
kernel cannot be a numba.cuda kernel at all, whatever the engine supported.

Each entry was checked against numba-cuda 0.x's `cuda.compile_ptx` (a kernel holding only that
construct fails to compile): try/except and with (unsupported bytecode or lowering), list, dict
and set displays and comprehensions and generator expressions (no heap objects in a kernel),
`global` stores, `del`, `yield`, starred unpacking (`a, *b = t`).
"""
from __future__ import annotations

import ast

NUMBA_REFUSES = {
    ast.Try: "try/except", ast.With: "a `with` block", ast.Global: "a `global` statement",
    ast.Delete: "`del`", ast.List: "a list", ast.ListComp: "a list comprehension", ast.Dict: "a dict",
    ast.DictComp: "a dict comprehension", ast.Set: "a set", ast.SetComp: "a set comprehension",
    ast.GeneratorExp: "a generator expression", ast.Yield: "`yield`", ast.YieldFrom: "`yield from`",
    ast.Starred: "starred unpacking",
}
if hasattr(ast, "TryStar"):
    NUMBA_REFUSES[ast.TryStar] = "try/except*"


def numba_refusal(node) -> str | None:
    """The refusal of a construct numba.cuda rejects anywhere inside `node`, or None."""
    for n in ast.walk(node):
        what = NUMBA_REFUSES.get(type(n))
        if what is not None:
            return f"{what} cannot be compiled by numba.cuda itself (it refuses it in a kernel)"
    return None
