"""The mutation self-test, fast form: each planted bug (harness/selftest/mutants.py) is caught by its small
probe case, run in-process on the session's backend; and every mutant leaves the engine as it found
it. The full campaign (every case under every mutant) is `harness mutate` (tox -e mutants).
"""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from harness.selftest.campaign import caught, catching_oracles, source_changed
from harness.selftest.mutants import MUTANTS, Patch, get_mutant, interleaved_threads

ROOT = Path(__file__).resolve().parents[2]
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
def test_mutant_replaces_one_seam_and_touches_nothing_else(name):
    """A mutant is a changed copy of the engine's seams: the defaults stay as they were."""
    from harness.engine.seams import default_seams
    base = default_seams()
    before = (dict(base.rules), dict(base.emitters), base.owned_arrays, base.mark_taped_loads,
              dict(base.option_defaults))
    planted = get_mutant(name).seams(base)
    changed = [f for f in ("owned_arrays", "mark_taped_loads", "interval_exclusive", "apart_in_thread",
                           "launch_fingerprint", "check_arguments")
               if getattr(planted, f) is not getattr(base, f)]
    changed += [f"rules[{k}]" for k in base.rules if planted.rules[k] is not base.rules[k]]
    changed += [f"emitters[{k}]" for k in base.emitters if planted.emitters[k] is not base.emitters[k]]
    changed += [f"option_defaults[{k}]" for k in planted.option_defaults
                if planted.option_defaults[k] != base.option_defaults.get(k)]
    assert len(changed) == 1, f"{name} changed {changed}"
    assert (dict(base.rules), dict(base.emitters), base.owned_arrays, base.mark_taped_loads,
            dict(base.option_defaults)) == before
    assert default_seams() == base


def test_mutations_module_plants_through_seams_only():
    """No sys.modules scans, no __defaults__ patches, no regular expressions over generated text."""
    source = (ROOT / "harness" / "selftest" / "mutants.py").read_text()
    for banned in ("sys.modules", "__defaults__", "import re\n", "re.sub", "re.compile", "rebind"):
        assert banned not in source, banned


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
    from harness.execution.runner import Runner
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
            outcome = Runner(ROOT, launching_backend.name, seams=m.seams()).execute(run)  # engines built with the bug
            got = _record(outcome)
            if caught(base["state"], got["state"]):
                break
    assert caught(base["state"], got["state"]), \
        f"{name} survived {m.probe}: {base['state']} -> {got['state']} ({outcome.message[:300]})"
    assert catching_oracles(got)
    if m.changes_source:      # the planted bug is in the generated kernel, not only in behaviour
        assert source_changed(base, got), f"{name}: the probe's generated source did not change: {got['sources']}"


def test_mutate_on_dask_records_a_killed_worker_and_resumes_from_its_log(tmp_path, monkeypatch, launching_backend):
    """`harness mutate --dask`: each mutant's process is a task on a LocalCluster of two workers; a
    mutant whose task kills its worker is recorded (worker_died) after its retries, every other
    result streams into the log, and --resume runs only the dead one again."""
    if launching_backend.name != "sim":
        pytest.skip("the campaign runs on the simulator here")
    pytest.importorskip("distributed")
    from harness.fuzz.distributed import KILL_ENV
    from harness.selftest.campaign import logged_mutants, main
    log = tmp_path / "mutants.jsonl"
    argv = ["--dask", "-j", "2", "--mutants", "flip-sin-rule,assign-not-accumulate", "--log", str(log),
            "--json", str(tmp_path / "m.json"), "--markdown", str(tmp_path / "m.md"), "--root", str(ROOT),
            "cases/math-heavy.yaml", "cases/polynomial.yaml"]
    monkeypatch.setenv(KILL_ENV, "assign-not-accumulate")
    assert main(argv) == 1                                    # a process did not finish
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(r["name"] for r in lines) == ["assign-not-accumulate", "baseline", "flip-sin-rule"]
    dead = next(r for r in lines if r["name"] == "assign-not-accumulate")
    assert dead["status"] == "worker_died" and "KilledWorker" in dead["stderr"] and not dead["records"]
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["mutants"]["flip-sin-rule"]["caught"] and "assign-not-accumulate" in summary["problems"]
    assert set(logged_mutants(log)) == {"baseline", "flip-sin-rule"}
    monkeypatch.delenv(KILL_ENV)
    assert main(argv + ["--resume"]) == 0                     # both caught now, nothing lost
    again = [json.loads(line) for line in log.read_text().splitlines()][len(lines):]
    assert [r["name"] for r in again] == ["assign-not-accumulate"]      # only the dead one ran again
    summary = json.loads((tmp_path / "m.json").read_text())
    assert all(s["caught"] for s in summary["mutants"].values()) and not summary["problems"]


def test_an_unknown_mutant_name_is_a_clean_error_naming_the_known_ones(tmp_path):
    import argparse

    from harness.selftest.campaign import campaign
    args = argparse.Namespace(mutants="flip-sin-rule,no-such-bug", root=tmp_path, cases=[])
    with pytest.raises(SystemExit, match="harness mutate: no mutant 'no-such-bug' \\(known: .*flip-sin-rule"):
        campaign(args)
