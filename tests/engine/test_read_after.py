"""read_after: whether a name a loop's body binds may be read after the loop, before a rebinding."""
import ast
import textwrap

import pytest

from harness.engine.frontend.read_after import read_after


def first_loop(source: str):
    """The function and the first loop whose own body binds t."""
    tree = ast.parse(textwrap.dedent(source)).body[0]
    loop = next(n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))
                and any(isinstance(s, ast.Assign) and getattr(s.targets[0], "id", None) == "t" for s in n.body))
    return tree, loop


@pytest.mark.parametrize("source, expected", [
    ("""
     def k(out, x, n):
         for j in range(n):
             t = x[j]
         out[0] = t
     """, True),
    ("""
     def k(out, x, n):
         for j in range(n):
             t = x[j]
         t = 0.0
         out[0] = t
     """, False),                                   # rebound before any read
    ("""
     def k(out, x, n):
         for j in range(n):
             t = x[j]
         for j in range(n):
             t = x[j] * 2
             out[j] = t
     """, False),                                   # the next loop rebinds it before reading it
    ("""
     def k(out, x, n):
         for j in range(n):
             t = x[j]
         for j in range(n):
             out[j] = t
             t = x[j]
     """, True),
    ("""
     def k(out, x, n):
         for j in range(n):
             t = x[j]
         if n > 2:
             t = 1.0
         out[0] = t
     """, True),                                    # the rebinding may not run
    ("""
     def k(out, x, n):
         for j in range(n):
             t = x[j]
         t += 1.0
     """, True),
    ("""
     def k(out, x, n):
         for i in range(n):
             out[i] = t if i > 0 else 0.0
             for j in range(n):
                 t = x[j]
     """, True),                                    # the enclosing loop's next iteration reads it
    ("""
     def k(out, x, n):
         for i in range(n):
             t = x[i]
         out[0] = t + out[1] if n > 1 else 0.0
     """, True),
    ("""
     def k(out, x, n):
         for i in range(n):
             t = x[i]
     """, False),
    ("""
     def k(out, x, n):
         for j in range(n):
             t = x[j]
         for t in x:
             out[0] += t
     """, False),                                   # the next loop's target rebinds it each iteration
    ("""
     def k(out, x, n):
         for j in range(n):
             t = x[j]
         for t in x:
             out[0] += 1.0
         out[1] = t
     """, True),                                    # that loop may run no iteration
])
def test_read_after(source, expected):
    tree, loop = first_loop(source)
    assert read_after(tree, loop, "t") is expected
