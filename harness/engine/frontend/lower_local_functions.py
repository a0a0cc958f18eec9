"""Functions defined inside a kernel body (`def cubic_weight(t): ...`), lowered as device functions.

numba.cuda compiles an inner function that does not escape by inlining it at each call, and its
free names read the enclosing function's variables when it is called (Python's late binding: a
name rebound between the `def` and the call is seen with its new value, in numba as in Python).
The lowering does the same: a `def` statement only records the function; each call inlines its
body (lower_inline.py) with its parameters bound to the arguments and each free name bound to
what that name holds in the defining body at the call: a scalar's current SSA value, an array.
Names the defining body does not bind are the module's globals, as for any device function.

Default parameter values are accepted when they are constant expressions (evaluated once, at the
`def`, as Python does). Refused: decorated inner functions (`cuda.jit` cannot run inside a kernel),
keyword-only and variadic parameters, `global`/`nonlocal` declarations (writes to the enclosing
body's variables), and an inner function used as a value rather than called (lower_exprs.py).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from harness.engine.frontend.desugar import constant_value, local_names
from harness.engine.frontend.source import KernelSource
from harness.engine.frontend.lower_state import LoweringState


@dataclass(frozen=True)
class LocalFunction:
    """An inner function: its source, and the lowering scope (LoweringState.scope) that defined it."""
    src: KernelSource
    scope: int
    line: int
    defaults: tuple = ()                   # values of the trailing parameters' defaults

    @property
    def __name__(self) -> str:
        return self.src.name


@dataclass(frozen=True)
class ConditionalFunction:
    """An inner function defined inside a branch of an `if` or a loop body, seen after that block: which
    body a call would run (or whether the name exists at all) depends on the path taken, so a call
    refuses."""
    name: str
    line: int


def after_branches(before: dict, then: dict, orelse: dict) -> dict:
    """The inner functions visible after an `if` whose branches left `then` and `orelse`: those from
    before it, and a ConditionalFunction for each defined (or redefined) inside a branch."""
    out = dict(before)
    for side in (then, orelse):
        for name, fn in side.items():
            if before.get(name) is not fn:
                out[name] = ConditionalFunction(name, getattr(fn, "line", 0))
    return out


def free_names(fdef: ast.FunctionDef) -> set[str]:
    """Names the function reads but neither takes as a parameter nor assigns (Python's rule: a name
    assigned anywhere in a function is local to it)."""
    params = {a.arg for a in fdef.args.args}
    loaded, stored = set(), set()
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name):
            (stored if isinstance(n.ctx, (ast.Store, ast.Del)) else loaded).add(n.id)
        elif isinstance(n, ast.FunctionDef) and n is not fdef:
            stored.add(n.name)
    return loaded - params - stored


def define(st: LoweringState, s: ast.FunctionDef) -> None:
    """Record the `def` statement `s` in the current scope; nothing is emitted until a call."""
    a = s.args
    if s.decorator_list:
        raise st.err(s, f"inner function {s.name} is decorated: numba.cuda compiles an inner function "
                     "only as a plain `def` (define a decorated device function at module level)")
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        raise st.err(s, f"inner function {s.name} takes *args, **kwargs or keyword-only parameters: only "
                     "positional parameters are supported")
    defaults = tuple(constant_value(d, st.src.globals, local_names(st.src.tree)) for d in a.defaults)
    if any(d is None for d in defaults):
        raise st.err(s, f"a default value of inner function {s.name} is not a constant expression")
    for n in ast.walk(s):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            raise st.err(n, f"`{type(n).__name__.lower()}` in inner function {s.name}: writes to the "
                         "enclosing body's variables are not supported")
    if s.name in st.env or s.name in st.arrays:
        raise st.err(s, f"inner function {s.name} reuses the name of a variable of the kernel")
    outer = st.src
    hidden = local_names(outer.tree)       # the defining body's names hide module globals inside it too
    src = KernelSource(s.name, outer.file, s, {k: v for k, v in outer.globals.items() if k not in hidden}, s)
    st.local_functions = {**st.local_functions, s.name: LocalFunction(src, st.scope, s.lineno, defaults)}


def closure(st: LoweringState, fn: LocalFunction, node) -> tuple[dict, dict, dict]:
    """(scalars, arrays, views) the free names of `fn` are bound to at this call: from the current body
    when it defined `fn`, else from the enclosing body as it was when it called into this one."""
    env, arrays, views = (st.env, st.arrays, st.views) if fn.scope == st.scope else st.outer_scopes[fn.scope]
    scalars, arrs, vs = {}, {}, {}
    for name in sorted(free_names(fn.src.tree)):
        if name in arrays and name not in env:
            arrs[name] = arrays[name]
            if name in views:
                vs[name] = views[name]
        elif name in env:
            scalars[name] = env[name]
    return scalars, arrs, vs



def with_defaults(fn: LocalFunction, args: list) -> list:
    """The call's arguments, completed from the trailing defaults (too few or too many stay as given,
    for the caller's count check)."""
    missing = len(fn.src.params) - len(args)
    if 0 < missing <= len(fn.defaults):
        return list(args) + [ast.Constant(v) for v in fn.defaults[len(fn.defaults) - missing:]]
    return list(args)
