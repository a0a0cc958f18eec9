"""The mutation self-test, fast form: each planted bug (harness/mutations.py) is caught by its small
probe case, run in-process on the session's backend; and every mutant leaves the engine as it found
it. The full campaign (every case under every mutant) is `harness mutate` (tox -e mutants).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from harness.mutation_run import caught, catching_oracles, source_changed
from harness.mutations import MUTANTS, Patch, get_mutant, interleaved_threads, patched_attributes

ROOT = Path(__file__).resolve().parent.parent
RACE_ATTEMPTS = 3                     # a race is shown by a lost update; give it a few launches

_baselines: dict[str, object] = {}


def _run(run_id: str, backend_name: str):
    from harness.cases import expand_runs, load_case_file
    path, _, _ = run_id.partition("::")
    for case in load_case_file(ROOT / path, ROOT):
        for run in expand_runs(case, backend_name):
            if run.run_id == run_id:
                return run
    raise LookupError(f"no run {run_id}")


def _record(outcome) -> dict:
    return {"state": outcome.state, "expect": outcome.expect,
            "failed": sorted({v.name for v in outcome.oracles if v.verdict == "fail"}),
            "error": outcome.error.type if outcome.error else None, "sources": dict(outcome.sources)}


@pytest.fixture(scope="module")
def mutant_cache(tmp_path_factory):
    """Mutated kernels go to a scratch cache, not the project's generated-kernel cache."""
    return str(tmp_path_factory.mktemp("mutant-kernels"))


def _snapshot():
    out = []
    for obj, name in patched_attributes():
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        out.append((obj, name, value))
    return out


def _unchanged(before) -> list[str]:
    changed = []
    for obj, name, value in before:
        now = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if now is not value:
            changed.append(f"{getattr(obj, '__name__', type(obj).__name__)}.{name}")
    return changed


def test_registry_has_ten_distinct_mutants():
    names = [m.name for m in MUTANTS]
    assert len(names) >= 10
    assert len(set(names)) == len(names)
    for m in MUTANTS:
        assert m.plants and m.patch_point and "::" in m.probe, m.name
        assert get_mutant(m.name) is m
    with pytest.raises(KeyError):
        get_mutant("no-such-mutant")


@pytest.mark.parametrize("name", [m.name for m in MUTANTS])
def test_mutant_patches_and_restores(name, backend):
    before = _snapshot()
    with get_mutant(name)():
        assert _unchanged(before), f"{name} patched nothing that patched_attributes() knows"
    assert _unchanged(before) == [], f"{name} left patched: {_unchanged(before)}"
    with pytest.raises(RuntimeError, match="boom"):       # restored when the block raises, too
        with get_mutant(name)():
            raise RuntimeError("boom")
    assert _unchanged(before) == []


def test_patch_restores_missing_and_inherited_attributes():
    class Base:
        def f(self):
            return "base"

    class Child(Base):
        pass

    mapping = {"a": 1}
    p = Patch()
    p.set(Child, "f", lambda self: "patched")
    p.item(mapping, "b", 2)
    p.item(mapping, "a", 3)
    assert Child().f() == "patched" and mapping == {"a": 3, "b": 2}
    p.restore()
    assert "f" not in Child.__dict__ and Child().f() == "base" and mapping == {"a": 1}


def test_interleaved_threads_restores_switch_interval(backend):
    import sys
    old = sys.getswitchinterval()
    if backend.name == "sim":
        from numba.cuda.simulator.kernelapi import FakeCUDAShared
        allocate = FakeCUDAShared.__dict__["array"]
    with interleaved_threads(1e-5):
        assert sys.getswitchinterval() == pytest.approx(1e-5)
        if backend.name == "sim":
            assert FakeCUDAShared.__dict__["array"] is not allocate     # made atomic for the block
    assert sys.getswitchinterval() == old
    if backend.name == "sim":
        assert FakeCUDAShared.__dict__["array"] is allocate


@pytest.mark.parametrize("name", [m.name for m in MUTANTS])
def test_mutant_is_caught_by_its_probe(name, launching_backend, mutant_cache, monkeypatch):
    from harness.runner import Runner
    monkeypatch.setenv("HARNESS_CACHE_DIR", mutant_cache)
    m = get_mutant(name)
    run = _run(m.probe, launching_backend.name)
    threads = interleaved_threads() if m.race and launching_backend.name == "sim" else contextlib.nullcontext()
    with threads:
        if m.probe not in _baselines:
            _baselines[m.probe] = _record(Runner(ROOT, launching_backend.name).execute(run))
        base = _baselines[m.probe]
        assert base["state"] in ("PASS", "XFAIL", "UNSUPPORTED"), f"{m.probe} is not green without a mutant: {base}"
        for _ in range(RACE_ATTEMPTS if m.race else 1):
            with m():
                outcome = Runner(ROOT, launching_backend.name).execute(run)   # fresh engines, fresh plans
            got = _record(outcome)
            if caught(base["state"], got["state"]):
                break
    assert caught(base["state"], got["state"]), \
        f"{name} survived {m.probe}: {base['state']} -> {got['state']} ({outcome.message[:300]})"
    assert catching_oracles(got)
    if m.changes_source:      # the planted bug is in the generated kernel, not only in behaviour
        assert source_changed(base, got), f"{name}: the probe's generated source did not change: {got['sources']}"
