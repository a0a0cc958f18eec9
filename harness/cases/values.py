"""Checks on every value of a case document, whatever key it sits under (the schema checks each
key's shape; these checks hold for all of them, including keys added later):

- text: no NUL or other control character (tab, newline and carriage return aside; none at all in
  keys), no lone surrogate (it cannot be written as UTF-8: the results writer would crash later),
  keys of at most MAX_KEY_CHARS and strings of at most MAX_TEXT_CHARS characters;
- numbers: finite (no .nan or .inf), integers within int64;
- the range of a scalar of a given dtype, for scalar arguments and explicit array `values`.

This module knows nothing of numpy: the ranges are written out.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

from harness.cases.limits import MAX_KEY_CHARS, MAX_TEXT_CHARS

Fail = Callable[[str, tuple], None]

_BAD_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_BAD_IN_KEY = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

INT64 = (-(1 << 63), (1 << 63) - 1)

# dtype -> (lowest, highest) value it holds; floats: the largest finite magnitude.
DTYPE_RANGES: dict[str, tuple[float, float]] = {
    **{f"int{b}": (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (8, 16, 32, 64)},
    **{f"uint{b}": (0, (1 << b) - 1) for b in (8, 16, 32, 64)},
    "float16": (-65504.0, 65504.0),
    "float32": (-3.4028234663852886e38, 3.4028234663852886e38),
    "complex64": (-3.4028234663852886e38, 3.4028234663852886e38),
    "float64": (-math.inf, math.inf), "complex128": (-math.inf, math.inf),
}


def _describe_char(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return f"a lone surrogate (U+{code:04X}), which is not valid Unicode text"
    return f"a control character (U+{code:04X})"


def check_text(value: str, path: tuple, fail: Fail, *, key: bool = False) -> None:
    limit = MAX_KEY_CHARS if key else MAX_TEXT_CHARS
    what = "a key" if key else "text"
    bad = (_BAD_IN_KEY if key else _BAD_IN_TEXT).search(value)
    if bad:
        fail(f"{what} contains {_describe_char(bad.group())} at character {bad.start() + 1}", path)
    if len(value) > limit:
        fail(f"{what} longer than {limit} characters ({len(value)})", path)


def check_number(value: Any, path: tuple, fail: Fail) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, float) and not math.isfinite(value):
        fail(f"{value!r} is not a finite number; give a finite value", path)
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        fail(f"integer {value} is out of range (a case's integers fit in 64 bits)", path)


def check_document(node: Any, fail: Fail, path: tuple = ()) -> None:
    """Every key, string and number of the document (depth is bounded by the reader)."""
    if isinstance(node, dict):
        for key, value in node.items():
            check_text(key, path + (key,), fail, key=True)
            check_document(value, fail, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            check_document(value, fail, path + (index,))
    elif isinstance(node, str):
        check_text(node, path, fail)
    elif isinstance(node, (int, float)):
        check_number(node, path, fail)


def dtype_problem(value: Any, dtype: str) -> str:
    """'' when a scalar `value` fits `dtype`, else why not."""
    if dtype == "bool":
        return "" if isinstance(value, bool) else f"a bool takes true or false (got {value!r})"
    if isinstance(value, bool):
        return f"{dtype} takes a number, not {str(value).lower()}"
    low, high = DTYPE_RANGES[dtype]
    if dtype.startswith(("int", "uint")) and not isinstance(value, int):
        return f"{dtype} takes an integer (got {value!r})"
    if not low <= value <= high:
        if dtype.startswith(("int", "uint")):
            return f"{value!r} is out of range for {dtype} ({low} to {high})"
        return f"{value!r} is too large for {dtype} (largest finite value {high:g})"
    return ""
