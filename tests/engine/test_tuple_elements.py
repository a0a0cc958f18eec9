"""harness/engine/frontend/tuple_elements.py: `f(...)[k]` named before a statement run once, and
`(a, b)[k]` replaced by its element, only where the order of evaluation stays numba's."""
from __future__ import annotations

import ast

from harness.engine.frontend.desugar import local_names
from harness.engine.frontend.tuple_elements import hoist_tuple_elements

HELPERS = '''
import math

from numba import cuda

def pair(u, v):
    return u + v, u * v

def single(u):
    return u * 2.0

def draw(states, i):
    return 0.5
'''


def _rewritten(body: str, tmp_path) -> str:
    import importlib.util
    path = tmp_path / "helpers_for_tuple_elements.py"        # inspect reads a helper's source from its file
    path.write_text(HELPERS)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = ast.parse("def kern(out, x, states, i, c):\n" + "".join("    " + l + "\n" for l in body.splitlines())).body[0]
    hoist_tuple_elements(fn, vars(module), local_names(fn))
    return ast.unparse(fn)


def test_an_element_of_a_call_is_named_before_the_statement(tmp_path):
    text = _rewritten("out[i] = pair(x[i], c)[1] + pair(x[i], x[i])[-2]", tmp_path)
    assert text.splitlines()[1:] == ["    _tuple_2_13_0, _tuple_2_13_1 = pair(x[i], c)",      # line 2, column 13
                                     "    _tuple_2_32_0, _tuple_2_32_1 = pair(x[i], x[i])",
                                     "    out[i] = _tuple_2_13_1 + _tuple_2_32_0"]


def test_the_order_of_calls_is_kept_or_the_statement_is_left_as_written(tmp_path):
    for body in ("out[i] = single(x[i]) + pair(x[i], c)[1]",          # another of the module's functions
                 "out[i] = draw(states, i) * pair(x[i], c)[0]",         # a draw advances its state
                 "out[i] = pair(x[i], c)[1] if c > 0 else 0.0",         # evaluated only in one branch
                 "out[i] = c > 0 and pair(x[i], c)[1]",
                 "while pair(x[i], c)[0] < 1.0:\n    c = c + 1.0"):     # evaluated at every trip
        assert "_tuple_" not in _rewritten(body, tmp_path), body


def test_an_element_of_a_tuple_display_is_that_element_unless_another_calls_the_module(tmp_path):
    assert "out[i] = x[i] * 2.0" in _rewritten("out[i] = (x[i], x[i] * 2.0)[-1]", tmp_path)
    assert "(single(x[i]), c)[1]" in _rewritten("out[i] = (single(x[i]), c)[1]", tmp_path)


def test_calls_that_only_compute_a_number_keep_the_rewrite_and_others_stop_it(tmp_path):
    """math functions and casts neither read nor write memory; an atomic does."""
    assert "_tuple_" in _rewritten("out[i] = math.sqrt(c) + float(pair(x[i], c)[1])", tmp_path)
    assert "_tuple_" not in _rewritten("out[i] = cuda.atomic.add(out, 0, 1.0) + pair(x[i], c)[1]", tmp_path)
    kept = _rewritten("out[i] = (cuda.atomic.add(out, 0, 1.0), x[i])[1]", tmp_path)
    assert "cuda.atomic.add" in kept                       # the atomic of a dropped element still runs
    assert "out[i] = x[i] * 2.0" in _rewritten("out[i] = (math.exp(c), x[i] * 2.0)[1]", tmp_path)
