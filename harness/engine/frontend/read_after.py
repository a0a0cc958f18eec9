"""Whether the value a name holds when a loop ends can be read after it: the question a loop asks
of the names its body binds first (lower_loops.loop carries those, so the reverse sweep sees the
last iteration's value).

Statements run after a loop are those that follow it in its block, then those after each
enclosing statement, and for an enclosing loop its test and the statements of its body before the
loop (the next iteration runs them). A name is read after the loop when one of them reads it before
a statement that surely rebinds it: an assignment to the plain name, on every path. A rebinding
inside a branch or a loop body may not run, so the scan goes on past it. The answer errs towards
"read": carrying a name that is not read costs a register, while a read that is missed would leave
the name reading a value of the loop's body after it.
"""
from __future__ import annotations

import ast

READ, KILLED, NONE = "read", "killed", "none"


def _loads(node, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Store)
               for n in ast.walk(node))


def _mentions(node, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _binds_plainly(target, name: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == name
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds_plainly(t, name) for t in target.elts)
    return False


def _scan_block(stmts, name: str) -> str:
    for s in stmts:
        r = _scan_statement(s, name)
        if r != NONE:
            return r
    return NONE


def _scan_statement(s, name: str) -> str:
    if isinstance(s, ast.Assign):
        if _loads(s.value, name) or any(_loads(t, name) for t in s.targets):
            return READ
        return KILLED if any(_binds_plainly(t, name) for t in s.targets) else NONE
    if isinstance(s, ast.AnnAssign):
        if s.value is not None and _loads(s.value, name):
            return READ
        return KILLED if s.value is not None and _binds_plainly(s.target, name) else NONE
    if isinstance(s, ast.AugAssign):
        return READ if _mentions(s, name) else NONE
    if isinstance(s, ast.If):
        if _loads(s.test, name):
            return READ
        body, orelse = _scan_block(s.body, name), _scan_block(s.orelse, name)
        if READ in (body, orelse):
            return READ
        return KILLED if body == orelse == KILLED else NONE
    if isinstance(s, (ast.For, ast.While)):
        header = s.iter if isinstance(s, ast.For) else s.test
        if _loads(header, name):
            return READ
        # a binding in the body may not run (no iteration), so it kills nothing after the loop; a
        # `for` whose target is the name rebinds it before each run of the body
        rebinds = isinstance(s, ast.For) and _binds_plainly(s.target, name)
        if READ in ((NONE if rebinds else _scan_block(s.body, name)), _scan_block(s.orelse, name)):
            return READ
        return NONE
    return READ if _mentions(s, name) else NONE


def _parents(tree) -> dict[int, ast.AST]:
    return {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}


def read_after(tree: ast.AST, loop: ast.stmt, name: str) -> bool:
    """Whether `name` may be read, after `loop` ends, before something rebinds it (`tree` is the
    function holding the loop). A loop not found in `tree` answers True."""
    parents = _parents(tree)
    node = loop
    if id(node) not in parents:         # a loop the lowering rewrote (`for v in a:`): the one written there
        where = (loop.lineno, loop.col_offset, loop.end_lineno, loop.end_col_offset)
        node = next((n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))
                     and (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset) == where), loop)
    while id(node) in parents:
        parent = parents[id(node)]
        for field in ("body", "orelse"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and any(s is node for s in block):
                k = next(i for i, s in enumerate(block) if s is node)
                r = _scan_block(block[k + 1:], name)
                if r != NONE:
                    return r == READ
                if isinstance(parent, (ast.For, ast.While)) and field == "body":
                    header = parent.iter if isinstance(parent, ast.For) else parent.test
                    if _loads(header, name) or _scan_block(block[:k], name) == READ:
                        return True
        if isinstance(parent, (ast.FunctionDef, ast.Lambda)):
            return False
        node = parent
    return True
