"""Entry names built on demand (harness/oracles/names.py) and the worst entries found by partial
selection (tolerance.Comparison.worst) give exactly what the eager versions gave: every name, and
the same worst entries in the same order, ties and repeated names included."""
from __future__ import annotations

import numpy as np
import pytest

from harness.model import WorstEntry
from harness.oracles import StateVar, Tolerance, compare_vectors, entry_names
from harness.oracles.names import Names, array_entry_names


def _eager(vars_):
    names = []
    for v in vars_:
        if not v.shape:
            names.append(v.name)
            continue
        for idx in np.ndindex(*v.shape):
            names.append(f"{v.name}[{','.join(map(str, idx))}]")
    return names


def test_entry_names_equal_the_eager_list():
    vars_ = [StateVar("a", ()), StateVar("x", (3, 4)), StateVar("e", (0,)), StateVar("t", (2, 1, 3)), StateVar("b", ())]
    lazy = entry_names(vars_)
    eager = _eager(vars_)
    assert len(lazy) == len(eager) and list(lazy) == eager and lazy == eager
    assert lazy[-1] == "b" and lazy[1] == "x[0,0]" and lazy[12] == "x[2,3]" and lazy[13] == "t[0,0,0]"
    with pytest.raises(IndexError):
        lazy[len(eager)]


def test_names_concat_repeat_and_wrap():
    joined = Names.concat([["p", "q"], Names.repeated("r", 3), array_entry_names("z", (2,))])
    assert list(joined) == ["p", "q", "r", "r", "r", "z[0]", "z[1]"]
    assert joined[2:5] == ["r", "r", "r"]


def _worst_by_full_sort(comp, limit, only_bad):
    """The previous implementation: a full stable sort, then a walk."""
    out, seen = [], set()
    for i in np.argsort(-comp.ratio, kind="stable"):
        if comp.names[i] in seen or (only_bad and not comp.bad[i]):
            continue
        seen.add(comp.names[i])
        out.append(WorstEntry(index=comp.names[i], ad=float(comp.ad[i]), fd=float(comp.ref[i]),
                              abs_err=float(comp.err[i]), rel_err=float(comp.rel_err[i])))
        if len(out) >= limit:
            break
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("only_bad", [False, True])
def test_worst_entries_equal_a_full_sort(seed, only_bad):
    rng = np.random.default_rng(seed)
    n = 400
    ref = rng.standard_normal(n)
    ad = ref.copy()
    bad = rng.choice(n, size=rng.integers(0, 60), replace=False)
    ad[bad] += rng.choice([1.0, 2.0, np.nan, np.inf], size=bad.size)     # ties, NaN and Inf among them
    names = [f"v[{i % 37}]" for i in range(n)]                            # repeated names (directions)
    comp = compare_vectors(ad, ref, Tolerance(1e-3, 1e-6), names)
    as_text = lambda entries: [repr(e) for e in entries]     # noqa: E731 - NaN entries compare equal as text
    for limit in (1, 3, 8, 50):
        assert as_text(comp.worst(limit, only_bad=only_bad)) == as_text(_worst_by_full_sort(comp, limit, only_bad))
    assert comp.worst_index() == int(np.argsort(-comp.ratio, kind="stable")[0])
