"""Which of a kernel's array parameters it reads and which it writes, read from its source.

The program tape (harness/problems/program.py) snapshots a buffer only before a launch that may write it,
and the replay protocol refuses a launch that writes what it reads. Parsing, not running; any use
the scan cannot classify (an array passed to a device function) counts as both read and written,
so the answer errs on the side of restoring more.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass

from harness.engine.frontend.source import python_function

_ATOMICS = {"add", "sub", "max", "min", "exch", "cas", "and_", "or_", "xor", "inc", "dec", "nanmax", "nanmin"}


@dataclass(frozen=True)
class Access:
    reads: frozenset
    writes: frozenset
    lines: dict                     # parameter -> first line that writes it


def _is_atomic(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr in _ATOMICS and isinstance(f.value, ast.Attribute)
            and f.value.attr == "atomic")


def array_access(fn) -> Access:
    fn = python_function(fn)                            # a @cuda.jit kernel's function too
    source = inspect.getsource(fn)
    tree = next(n for n in ast.parse(textwrap.dedent(source)).body if isinstance(n, ast.FunctionDef))
    first_line = fn.__code__.co_firstlineno - tree.lineno
    params = [a.arg for a in tree.args.args]
    reads, writes, lines = set(), set(), {}

    def wrote(name, node):
        writes.add(name)
        lines.setdefault(name, node.lineno + first_line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in params:
            if isinstance(node.ctx, ast.Store):
                wrote(node.value.id, node)
            else:
                reads.add(node.value.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) \
                and isinstance(node.target.value, ast.Name) and node.target.value.id in params:
            reads.add(node.target.value.id)
        elif isinstance(node, ast.Call):
            for k, arg in enumerate(node.args):
                if isinstance(arg, ast.Name) and arg.id in params:
                    if _is_atomic(node) and k == 0:          # read-modify-write
                        reads.add(arg.id)
                        wrote(arg.id, node)
                    elif not _is_atomic(node):               # unknown use: assume both
                        reads.add(arg.id)
                        wrote(arg.id, node)
    return Access(frozenset(reads), frozenset(writes), lines)
