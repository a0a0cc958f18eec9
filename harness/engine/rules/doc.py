"""The rule list of docs/engine.md, generated from the rule tables so that it cannot drift.

    python -m harness.engine.rules.doc            # rewrite the list in docs/engine.md
    python -m harness.engine.rules.doc --check    # exit 1 when docs/engine.md differs from the tables

tests/engine/test_rule_cases.py fails when the document and the tables disagree.
"""
from __future__ import annotations

import argparse
import builtins
import math
import sys
from pathlib import Path

import numpy as np

from harness.engine.frontend.source import FUNCTIONS
from harness.engine.rules.table import BOOLEAN, CONSTANTS, NO_RULE_MESSAGE, PARTIALS, PIECEWISE_CONSTANT
from harness.engine.emission.syntax import PRIM_SYNTAX

BEGIN = "<!-- rule list: generated from harness/engine/rules/table.py by `python -m harness.engine.rules.doc`; do not edit -->"
END = "<!-- end of the generated rule list -->"
DOC = Path(__file__).resolve().parents[3] / "docs" / "engine.md"
_OPERANDS = ("x", "y")


def spellings() -> dict[str, list[str]]:
    """Every way a kernel can write each primitive: operators, builtins, math.* and numpy names."""
    out: dict[str, set[str]] = {}
    for op, text in PRIM_SYNTAX.items():
        if op != "copy" and "{" in text and not text.split("(")[0].isidentifier():
            out.setdefault(op, set()).add(text.format(*_OPERANDS))
    for prefix, module in (("", builtins), ("math.", math), ("np.", np)):
        for attr in dir(module):
            if attr.startswith("_"):
                continue
            name = FUNCTIONS.get(id(getattr(module, attr, None)))
            if name is not None:
                out.setdefault(name, set()).add(f"{prefix}{attr}")
    out.setdefault("copy", set()).add("y = x")
    return {op: sorted(v, key=lambda s: (s.startswith("np."), s)) for op, v in out.items()}


def _row(op: str, names: dict[str, list[str]], what: str) -> str:
    spelled = ", ".join(f"`{s}`" for s in names.get(op, [])) or "(internal)"
    return f"| `{op}` | {spelled} | {what} |"


def rule_list() -> str:
    names = spellings()
    lines = [BEGIN, "",
             "Operands are `x`, `y` in call order and `r` is the result; each partial is written as the "
             "generated code evaluates it (`sign(x)` is 1, -1 or 0).", "",
             "| primitive | written as | partial derivatives (d/dx, d/dy) |", "|---|---|---|"]
    for op in sorted(PARTIALS):
        lines.append(_row(op, names, "; ".join(f"`{p}`" for p in PARTIALS[op])))
    for op in sorted(PIECEWISE_CONSTANT):
        lines.append(_row(op, names, "0 (piecewise constant: carries no derivative)"))
    for op in sorted(BOOLEAN):
        lines.append(_row(op, names, "none (a boolean result)"))
    for op in sorted(NO_RULE_MESSAGE):
        lines.append(_row(op, names, f"refused: {NO_RULE_MESSAGE[op]}"))
    lines += ["", "Constants: " + ", ".join(f"`{k}` = {v!r}" for k, v in CONSTANTS.items()) + ".",
              "Any other call is refused with an `UnsupportedError` naming its line.", "", END]
    return "\n".join(lines)


def render(text: str) -> str:
    """`text` (docs/engine.md) with its rule list replaced by the generated one."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"docs/engine.md lacks the markers {BEGIN!r} ... {END!r}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + rule_list() + tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/engine.md is out of date")
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)
    text = args.doc.read_text()
    new = render(text)
    if args.check:
        if new != text:
            print(f"{args.doc}: the rule list differs from harness/engine/rules/table.py; "
                  "run python -m harness.engine.rules.doc", file=sys.stderr)
            return 1
        return 0
    args.doc.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
