"""Results per release -> the release matrix: per run, its state in each release and the releases
where its derivative went from wrong to right ("fixed in") or from right to wrong ("regressed in").

Right and wrong are policy.RELEASE_RIGHT / RELEASE_WRONG; a release where the run is unsupported,
skipped or absent is passed over, so a mark always compares two releases that ran the case.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from harness.model import Outcome
from harness.policy import RELEASE_RIGHT, RELEASE_WRONG
from harness.releases.envs import version_key


@dataclass
class ReleaseRow:
    run_id: str
    case_id: str
    states: dict                                  # version -> state (absent: not run there)
    messages: dict = field(default_factory=dict)  # version -> the run's message
    fixed_in: list = field(default_factory=list)
    regressed_in: list = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return len(set(self.states.values())) > 1


@dataclass
class ReleaseMatrix:
    engine: str
    versions: list                                # oldest first
    rows: list                                    # ReleaseRow, changed rows first, then by run id
    problems: dict = field(default_factory=dict)  # version -> why its results do not describe it

    def counts(self, version: str) -> Counter:
        return Counter(r.states[version] for r in self.rows if version in r.states)

    @property
    def changed(self) -> list:
        return [r for r in self.rows if r.changed]


def marks(states: dict, versions: list) -> tuple[list, list]:
    """(fixed in, regressed in): releases whose verdict differs from the last release that had one."""
    fixed, regressed, last = [], [], None
    for v in versions:
        state = states.get(v)
        verdict = "right" if state in RELEASE_RIGHT else "wrong" if state in RELEASE_WRONG else None
        if verdict is None:
            continue
        if last == "wrong" and verdict == "right":
            fixed.append(v)
        elif last == "right" and verdict == "wrong":
            regressed.append(v)
        last = verdict
    return fixed, regressed


def build_matrix(engine: str, outcomes_by_version: dict, problems: dict | None = None) -> ReleaseMatrix:
    """`outcomes_by_version`: version -> the outcomes of that release's session (this engine's
    runs are kept; a run id may appear once per release)."""
    versions = sorted(outcomes_by_version, key=version_key)
    rows: dict[str, ReleaseRow] = {}
    for v in versions:
        for o in outcomes_by_version[v]:
            if not isinstance(o, Outcome) or o.engine != engine:
                continue
            row = rows.setdefault(o.run_id, ReleaseRow(o.run_id, o.case_id, {}))
            row.states[v] = o.state
            row.messages[v] = o.message
    for row in rows.values():
        row.fixed_in, row.regressed_in = marks(row.states, versions)
    ordered = sorted(rows.values(), key=lambda r: (not r.changed, r.run_id))
    return ReleaseMatrix(engine, versions, ordered, dict(problems or {}))


def markdown(matrix: ReleaseMatrix, command: str) -> str:
    """What changed across the releases, as the Markdown table docs/engines.md embeds."""
    lines = [f"Releases of {matrix.engine}: {', '.join(matrix.versions)}. Regenerate with `{command}`.", ""]
    for v, why in matrix.problems.items():
        lines.append(f"- {v}: {why}")
    if matrix.problems:
        lines.append("")
    totals = " | ".join(f"{v}" for v in matrix.versions)
    lines += [f"| state | {totals} |", "|---|" + "---|" * len(matrix.versions)]
    states = sorted({s for r in matrix.rows for s in r.states.values()})
    for s in states:
        lines.append(f"| {s} | " + " | ".join(str(matrix.counts(v)[s]) for v in matrix.versions) + " |")
    lines.append("")
    changed = matrix.changed
    if not changed:
        lines.append(f"No run changed state across these releases ({len(matrix.rows)} runs).")
        return "\n".join(lines) + "\n"
    lines += ["| run | states, oldest release first | fixed in | regressed in |", "|---|---|---|---|"]
    for r in changed:
        states = ", ".join(f"{v} {r.states.get(v, '-')}" for v in matrix.versions)
        lines.append(f"| `{r.run_id}` | {states} | {', '.join(r.fixed_in) or '-'} | "
                     f"{', '.join(r.regressed_in) or '-'} |")
    lines.append("")
    lines.append(f"{len(matrix.rows) - len(changed)} other runs had the same state in every release.")
    return "\n".join(lines) + "\n"


def replace_section(text: str, engine: str, body: str) -> str:
    """`text` with the part between `<!-- releases:ENGINE -->` and `<!-- /releases:ENGINE -->`
    replaced by `body` (appended with the markers when absent)."""
    start, end = f"<!-- releases:{engine} -->", f"<!-- /releases:{engine} -->"
    block = f"{start}\n{body}{end}"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        return before + block + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + block + "\n"
