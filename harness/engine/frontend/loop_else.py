"""`for ... else` and `while ... else` as plain loops: the one definition the engine's lowering and
the adapters' translator both use, so the three read the same language.

The else block runs when the loop ends without `break`. A loop with no break of its own is the loop
followed by its else block. Otherwise a flag is cleared before the loop and set right before each
of the loop's own breaks (not those of nested loops or inner functions), and the else block runs
under `if not flag`.
"""
from __future__ import annotations

import ast
from typing import Callable


def without_else(s: ast.For | ast.While, flag_name: Callable[[], str]) -> list[ast.stmt]:
    """The statements `s` (a loop with an else block) means. `flag_name()` is called only when a
    flag is needed, and names it."""
    loop = ast.copy_location(type(s)(**{f: getattr(s, f) for f in s._fields if f != "orelse"}, orelse=[]), s)
    if not breaks(s.body):
        return [loop, *s.orelse]
    flag = flag_name()
    loop.body = _flag_breaks(s.body, flag)
    set_flag = ast.copy_location(ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(False)), s)
    guarded = ast.copy_location(ast.If(ast.UnaryOp(ast.Not(), ast.Name(flag, ast.Load())), s.orelse, []),
                                s.orelse[0])
    for node in (loop, guarded):
        ast.fix_missing_locations(node)
    return [set_flag, loop, guarded]


def breaks(stmts) -> bool:
    """A `break` of this loop (those of nested loops and inner functions excluded)."""
    for s in stmts:
        if isinstance(s, ast.Break):
            return True
        if isinstance(s, ast.If) and (breaks(s.body) or breaks(s.orelse)):
            return True
    return False


def _flag_breaks(stmts, flag: str) -> list:
    out = []
    for s in stmts:
        if isinstance(s, ast.Break):
            out.append(ast.copy_location(ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(True)), s))
        elif isinstance(s, ast.If):
            s = ast.copy_location(ast.If(s.test, _flag_breaks(s.body, flag), _flag_breaks(s.orelse, flag)), s)
        out.append(s)
    return out
