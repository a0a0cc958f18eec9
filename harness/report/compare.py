"""Compare a run set with a baseline: new failures, newly fixed, changed errors, added, removed.

A run is identified by (run_id, backend, engine): run ids name case, variant, mode and dtype but
not the backend or the AD engine, and the sim and ptx tiers run the same ids in separate processes whose results files are
merged. Within one run set a later record for the same key replaces the earlier one (a rerun
appended to the same file).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from harness.model import Outcome
from harness.policy import FAILING, FIXED

BAD_STATES = FAILING              # the names the renderer imports

RunKey = tuple[str, str, str]
DEFAULT_ENGINE = "bundled"


def engine_of(outcome: Outcome) -> str:
    """The AD engine a run used: the record's `engine` field (a name, or {name, ...}); records
    written before engines were recorded used the bundled one."""
    engine = getattr(outcome, "engine", None)
    if isinstance(engine, dict):
        engine = engine.get("name")
    return str(engine) if engine else DEFAULT_ENGINE


def run_key(outcome: Outcome) -> RunKey:
    """(run id, backend, engine): the same run on another backend or engine is another run."""
    return outcome.run_id, outcome.backend, engine_of(outcome)


def latest_by_key(outcomes: Iterable[Outcome]) -> dict[RunKey, Outcome]:
    """Last record wins, in input order (dicts keep the first insertion position)."""
    latest: dict[RunKey, Outcome] = {}
    for outcome in outcomes:
        latest[run_key(outcome)] = outcome
    return latest


@dataclass(frozen=True)
class Change:
    run_id: str
    backend: str
    old_state: str | None
    new_state: str | None
    old_error: str = ""            # "Type: message" (message cut short) or ""
    new_error: str = ""
    old_category: str | None = None
    new_category: str | None = None
    engine: str = DEFAULT_ENGINE

    @property
    def key(self) -> RunKey:
        return self.run_id, self.backend, self.engine


@dataclass
class ResultsDiff:
    """What changed from a baseline's results to the current ones (not an entrywise oracle
    comparison, which is harness.oracles.tolerance.Comparison)."""
    new_failures: list[Change] = field(default_factory=list)   # not bad before, bad now
    newly_fixed: list[Change] = field(default_factory=list)    # bad before, PASS/XFAIL now
    changed_errors: list[Change] = field(default_factory=list)  # bad both times, differently
    other_changes: list[Change] = field(default_factory=list)  # e.g. PASS -> SKIP
    added: list[Change] = field(default_factory=list)          # only in the current set
    removed: list[Change] = field(default_factory=list)        # only in the baseline
    unchanged: int = 0

    def summary(self) -> str:
        def count(items: list, noun: str) -> str:
            return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"
        return (f"{count(self.new_failures, 'new failure')}, {len(self.newly_fixed)} newly fixed, "
                f"{count(self.changed_errors, 'changed error')}, {len(self.added)} added, "
                f"{len(self.removed)} removed")


def _error_text(outcome: Outcome | None, limit: int = 160) -> str:
    if outcome is None or outcome.error is None:
        return ""
    message = " ".join((outcome.error.message or "").split())
    if len(message) > limit:
        message = message[: limit - 1] + "\u2026"
    return f"{outcome.error.type}: {message}" if message else outcome.error.type


def _error_type(outcome: Outcome) -> str | None:
    return outcome.error.type if outcome.error is not None else None


def compare(baseline: Iterable[Outcome], current: Iterable[Outcome],
            category_of: Callable[[Outcome], str | None] | None = None) -> ResultsDiff:
    """Classify every run of either set.

    - new failure: bad now (FAIL, ZERO, NONDET, ERROR, XPASS) and not bad in the baseline. The
      issue asks for "was PASS/XFAIL"; SKIP/UNSUPPORTED -> bad counts too, since a run that stopped
      being skipped and now fails is a regression the reader must see.
    - newly fixed: bad in the baseline, PASS or XFAIL now.
    - changed error: bad both times but the state, the error type or the category differs.
    - other change: any other state change (e.g. PASS -> SKIP).
    """
    category_of = category_of or (lambda o: o.error.category if o.error else None)
    old = latest_by_key(baseline)
    new = latest_by_key(current)
    result = ResultsDiff()

    def change(key: RunKey, before: Outcome | None, after: Outcome | None) -> Change:
        return Change(run_id=key[0], backend=key[1], engine=key[2],
                      old_state=before.state if before else None,
                      new_state=after.state if after else None,
                      old_error=_error_text(before), new_error=_error_text(after),
                      old_category=category_of(before) if before else None,
                      new_category=category_of(after) if after else None)

    for key, after in new.items():
        before = old.get(key)
        if before is None:
            result.added.append(change(key, None, after))
            continue
        was_bad, is_bad = before.state in FAILING, after.state in FAILING
        if is_bad and not was_bad:
            result.new_failures.append(change(key, before, after))
        elif was_bad and after.state in FIXED:
            result.newly_fixed.append(change(key, before, after))
        elif was_bad and is_bad:
            item = change(key, before, after)
            if (before.state != after.state or _error_type(before) != _error_type(after)
                    or item.old_category != item.new_category):
                result.changed_errors.append(item)
            else:
                result.unchanged += 1
        elif before.state != after.state:
            result.other_changes.append(change(key, before, after))
        else:
            result.unchanged += 1
    for key, before in old.items():
        if key not in new:
            result.removed.append(change(key, before, None))
    return result
