"""AST passes over a kernel's body before SSA lowering: early returns and loop jumps become flags.

`return` becomes `_live = False` guarding the rest of the body, so every thread reaches the end
(Active reductions and barriers need it); in device functions a returned value is assigned to
`_ret0, _ret1, ...` first. `break` and `continue` set per-loop flags that guard what follows.
"""
from __future__ import annotations

import ast
import copy

from harness.engine.frontend.source import KernelSource

# Internal flags live in the same environment as the kernel's own names; the '!' keeps them apart
# (no Python identifier contains it) and the lowering turns it into '_' for the generated code.
LIVE = "!live"
RET = "!ret"
BREAK = "!brk"
SKIP = "!skip"


def _always_returns(stmts) -> bool:
    for s in stmts:
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.If) and s.orelse and _always_returns(s.body) and _always_returns(s.orelse):
            return True
    return False


def _contains_return(stmts) -> bool:
    """A `return` of this body: those of inner function definitions belong to them."""
    for s in stmts:
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.FunctionDef):
            continue
        if any(_contains_return(getattr(s, field, None) or []) for field in ("body", "orelse", "finalbody", "handlers", "cases")):
            return True
    return False


def _return_assign(s: ast.Return, src: KernelSource, values: bool) -> list:
    """`return e` inside a device function assigns the returned value(s) to _ret0, _ret1, ..."""
    bare = s.value is None or (isinstance(s.value, ast.Constant) and s.value.value is None)
    if bare:
        return []
    if not values:
        raise src.unsupported(s, "a kernel cannot return a value")
    elts = s.value.elts if isinstance(s.value, ast.Tuple) else [s.value]
    names = [ast.Name(f"{RET}{k}", ast.Store()) for k in range(len(elts))]
    target = names[0] if len(names) == 1 else ast.Tuple(names, ast.Store())
    value = elts[0] if len(elts) == 1 else ast.Tuple(elts, ast.Load())
    return [ast.copy_location(ast.Assign([target], value), s)]


def lower_returns(stmts: list, src: KernelSource, values: bool = False) -> list:
    """Rewrite `return` into `_live = False` plus guards. The caller sets `_live = True` first."""
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            out += _return_assign(s, src, values)
            out.append(ast.copy_location(ast.Assign([ast.Name(LIVE, ast.Store())], ast.Constant(False)), s))
            return out                       # the rest of this block is dead code
        if isinstance(s, (ast.For, ast.While)) and _contains_return([s]):
            raise src.unsupported(s, "`return` inside a loop is not supported yet")
        if isinstance(s, ast.If) and _contains_return([s]):
            s = copy.copy(s)
            s.body = lower_returns(s.body, src, values)
            s.orelse = lower_returns(s.orelse, src, values)
            out.append(s)
            rest = stmts[k + 1:]
            if rest:
                guard = ast.If(ast.Name(LIVE, ast.Load()), lower_returns(rest, src, values), [])
                out.append(ast.copy_location(guard, rest[0]))
            return out
        out.append(s)
    return out


def prepare_body(src: KernelSource, values: bool) -> list:
    """The function body with returns lowered; a single trailing return needs no flag."""
    body = list(src.tree.body)
    if not _contains_return(body):
        return body
    if isinstance(body[-1], ast.Return) and not _contains_return(body[:-1]):
        return body[:-1] + _return_assign(body[-1], src, values)
    init = ast.copy_location(ast.Assign([ast.Name(LIVE, ast.Store())], ast.Constant(True)), src.tree)
    return [init] + lower_returns(body, src, values)


def has_jump(stmts) -> bool:
    """break/continue belonging to this loop body (not to a nested loop; those in a nested loop's
    `else` block are this loop's)."""
    for s in stmts:
        if isinstance(s, (ast.Break, ast.Continue)):
            return True
        if isinstance(s, ast.If) and (has_jump(s.body) or has_jump(s.orelse)):
            return True
        if isinstance(s, (ast.For, ast.While)) and has_jump(s.orelse):
            return True
    return False


def uses_name(stmts, name) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for s in stmts for n in ast.walk(s))


def assigned_names(stmts) -> set[str]:
    names = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
    return names


def lower_jumps(stmts: list, src: KernelSource, brk: str, skip: str) -> list:
    """`break` sets the loop-carried flag _brk (later iterations do nothing; a while loop stops);
    `continue` sets _skip, reset at the top of every iteration. Statements after a jump are guarded."""
    if not has_jump(stmts):
        return stmts
    body = _lower_jumps_block(stmts, src, brk, skip)
    if uses_name(body, skip):
        body = [ast.Assign([ast.Name(skip, ast.Store())], ast.Constant(False))] + body
    guard = ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load()))
    if uses_name(body, brk):
        body = [ast.If(guard, body, [])]
    for n in body:
        ast.fix_missing_locations(n)
        ast.copy_location(n, stmts[0])
    return body


def _lower_jumps_block(stmts, src, brk, skip):
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, (ast.Break, ast.Continue)):
            flag = brk if isinstance(s, ast.Break) else skip
            out.append(ast.copy_location(ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(True)), s))
            return out
        if isinstance(s, (ast.If, ast.For, ast.While)) and has_jump([s]):
            s = copy.copy(s)
            if isinstance(s, ast.If):            # a nested loop's own body keeps its jumps
                s.body = _lower_jumps_block(s.body, src, brk, skip)
            s.orelse = _lower_jumps_block(s.orelse, src, brk, skip)
            out.append(s)
            rest = stmts[k + 1:]
            if rest:
                live = ast.BoolOp(ast.And(), [ast.UnaryOp(ast.Not(), ast.Name(brk, ast.Load())),
                                              ast.UnaryOp(ast.Not(), ast.Name(skip, ast.Load()))]) \
                    if uses_name([s], skip) and uses_name([s], brk) else \
                    ast.UnaryOp(ast.Not(), ast.Name(skip if uses_name([s], skip) else brk, ast.Load()))
                out.append(ast.copy_location(ast.If(live, _lower_jumps_block(rest, src, brk, skip), []), rest[0]))
            return out
        out.append(s)
    return out

