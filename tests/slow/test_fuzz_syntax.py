"""The syntax fuzzer (harness/fuzz/syntax.py): reproducible generation over the numba.cuda dialect,
and the bounded syntax fuzz CI runs: 300 generated kernels (fixed seeds), primal, forward and reverse
built on the simulator, must give no exception but a refusal.

The bounded run is marked `fuzz` (a step of tox env `ci` runs `pytest tests/slow/test_fuzz.py
tests/slow/test_fuzz_syntax.py -m fuzz`). Crash classes already found and recorded for the owners of the
code that raises them (/work/notes/crash-classes.md) are listed in KNOWN_CRASHES by the engine line
that raises them: the test fails on any other crash, and also when a listed class no longer occurs,
so the list shrinks as the fixes land instead of hiding a new crash behind an old one.
"""
from __future__ import annotations

import ast
import re

import pytest

from harness.fuzz.syntax import generate_syntax

CI_SEEDS = 300
CI_CHUNKS = 6
# raising engine location -> (what it is, a seed that shows it); remove an entry when its fix lands
KNOWN_CRASHES: dict[str, tuple[str, int]] = {}
# seeds of crash classes whose fixes landed: each must build in every mode
FIXED_CLASSES = {
    43: "a for loop nested in a while loop rebinding the counter (a KeyError of a carried name in lower_loops)",
    11: "a loop whose body lowers to nothing (the generated module had an empty for block)",
}
FEATURES = {"tuple-assign", "swap", "nested-unpack", "augassign", "int-augassign", "subscript-augassign",
            "subscript-store", "atomic", "assert", "break-continue", "if", "elif", "for-range", "while", "for-else",
            "nested-loops", "compare-chain", "bool-op", "not", "ternary", "int-ternary", "bit-op", "shift",
            "int-div", "float-cast", "int-cast", "unary-math", "binary-math", "domain-math", "device-function",
            "len", "shape", "shared-array", "local-array", "shape-unpack", "gather", "negative-index"}


def test_generation_is_reproducible_and_parses():
    for seed in range(50):
        a, b = generate_syntax(seed), generate_syntax(seed)
        assert a.source == b.source
        ast.parse(a.source)
    assert generate_syntax(1).source != generate_syntax(2).source


def test_the_ci_seeds_cover_the_dialect():
    seen = set()
    for seed in range(CI_SEEDS):
        seen |= set(generate_syntax(seed).features)
    assert FEATURES <= seen, sorted(FEATURES - seen)


def _known(result) -> str | None:
    m = re.search(r"raised at (engine/[a-z_]+\.py)", result.message or "")
    return m.group(1) if m and m.group(1) in KNOWN_CRASHES else None


@pytest.mark.fuzz
@pytest.mark.parametrize("chunk", range(CI_CHUNKS))
def test_bounded_syntax_fuzz_raises_only_refusals(chunk, tmp_path, backend, request):
    if "fuzz" not in (request.config.option.markexpr or ""):
        pytest.skip("the bounded fuzz runs when selected: pytest tests/slow/test_fuzz_syntax.py -m fuzz")
    if backend.name != "sim":
        pytest.skip("the bounded syntax fuzz runs on the simulator (the ptx backend's compile costs seconds a kernel)")
    from harness.fuzz.syntax import run_syntax_seeds
    per = CI_SEEDS // CI_CHUNKS
    tally = run_syntax_seeds(range(chunk * per, (chunk + 1) * per), backend, tmp_path)
    assert tally.kernels == per
    new = [c for c in tally.crashes if _known(c) is None]
    assert not new, "\n\n".join(f"seed {c.seed} ({c.mode}): {c.message}\n{c.source}\n{c.traceback}" for c in new)


@pytest.mark.fuzz
def test_every_known_crash_class_still_occurs(tmp_path, backend, request):
    """When one no longer does, its fix has landed: remove it from KNOWN_CRASHES."""
    if "fuzz" not in (request.config.option.markexpr or "") or backend.name != "sim":
        pytest.skip("runs with the bounded syntax fuzz, on the simulator")
    from harness.fuzz.syntax import run_syntax_seeds
    if not KNOWN_CRASHES:
        pytest.skip("no known crash class")
    for where, (_what, seed) in KNOWN_CRASHES.items():
        tally = run_syntax_seeds([seed], backend, tmp_path)
        assert [_known(c) for c in tally.crashes] == [where], \
            f"seed {seed} no longer crashes at {where} ({tally.summary()}): remove it from KNOWN_CRASHES"


@pytest.mark.parametrize("seed", sorted(FIXED_CLASSES))
def test_fixed_crash_classes_build(seed, tmp_path, backend):
    if backend.name != "sim":
        pytest.skip("the syntax fuzz runs on the simulator")
    from harness.fuzz.syntax import run_syntax_seeds
    tally = run_syntax_seeds([seed], backend, tmp_path)
    assert not tally.crashes, f"{FIXED_CLASSES[seed]}: {tally.crashes[0].message}"
