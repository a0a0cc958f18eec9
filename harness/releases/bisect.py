"""The first release where one run's state changed: a binary search over the ordered releases.

It assumes one change between the oldest and the newest release asked for (as `git bisect`
does); each probe runs only that run through one release (run.run_release). The probes' states
are all reported, so a run that changed more than once shows it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness.results.store import read_results
from harness.releases.envs import ensure
from harness.releases.run import run_release


@dataclass
class BisectResult:
    run_id: str
    engine: str
    probed: dict = field(default_factory=dict)    # version -> state
    first_changed: str | None = None              # None: same state at both ends
    last_before: str | None = None

    def summary(self) -> str:
        order = ", ".join(f"{v} {s}" for v, s in self.probed.items())
        if self.first_changed is None:
            return f"{self.run_id} on {self.engine}: no change between the releases probed ({order})"
        return (f"{self.run_id} on {self.engine}: {self.probed[self.last_before]} up to {self.last_before}, "
                f"{self.probed[self.first_changed]} from {self.first_changed} (probed: {order})")


def bisect_releases(versions: list, state_of: Callable[[str], str]) -> tuple[str | None, str | None, dict]:
    """(last release with the oldest's state, first release with another, states probed)."""
    probed = {}

    def probe(v):
        if v not in probed:
            probed[v] = state_of(v)
        return probed[v]

    lo, hi = 0, len(versions) - 1
    first = probe(versions[lo])
    if probe(versions[hi]) == first:
        return None, None, probed
    while hi - lo > 1:                      # invariant: versions[lo] has `first`, versions[hi] not
        mid = (lo + hi) // 2
        if probe(versions[mid]) == first:
            lo = mid
        else:
            hi = mid
    return versions[lo], versions[hi], dict(sorted(probed.items(), key=lambda kv: versions.index(kv[0])))


def bisect_run(run_id: str, engine: str, versions: list, project: Path) -> BisectResult:
    def state_of(version: str) -> str:
        env = ensure(engine, version, project)
        out = project / "reports" / "releases" / engine / "bisect" / f"{version}.jsonl"
        result = run_release(env, project, [run_id], out=out)
        if result.problem:
            return f"not run ({result.problem})"
        _, outcomes = read_results(out)
        states = [o.state for o in outcomes if o.run_id == run_id and o.engine == engine]
        if not states:
            raise ValueError(f"{run_id} is not a run of {engine} (release {version} collected "
                             f"{', '.join(sorted({o.run_id for o in outcomes})) or 'nothing'})")
        return states[0]

    before, after, probed = bisect_releases(versions, state_of)
    return BisectResult(run_id, engine, probed, after, before)
