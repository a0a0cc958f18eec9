"""Failure categories: an ordered list of regex rules over (type, message); the first match wins.

The subject a rule sees is the run's error when it has one (error type, error message), and
otherwise the run's state and message (type "ZERO", "NONDET", "FAIL", ...), so silent wrong
gradients can be categorized exactly like exceptions. Rules live in YAML (the bundled
categories.yaml, or a file given with `harness report --categories`) so that a team can
re-categorize old results without rerunning anything.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.model import Outcome
from harness.policy import ORACLE_STATES, PASSING, State

UNCATEGORIZED = "uncategorized"
DEFAULT_RULES_PATH = Path(__file__).with_name("categories.yaml")
# Runs that passed (an expected error raised, an expected refusal, a skip) have nothing wrong with
# them, so they get no category even when they carry the error they expected. A known bug (XFAIL)
# is categorized: it is a failure, only an expected one.
_UNCATEGORIZED_STATES = PASSING - {State.XFAIL}
# A failing oracle that names the failure better than the run's state does (an XFAIL's known bug),
# by rank as in the policy.
_STATE_OF_ORACLE = tuple(ORACLE_STATES.items())
_RULE_KEYS = frozenset({"name", "type", "message", "description"})


class CategoryConfigError(ValueError):
    """A categories file that cannot be used; the message names the file and the rule."""


@dataclass(frozen=True)
class CategoryRule:
    name: str
    type: re.Pattern | None = None        # searched in the error type (or the state)
    message: re.Pattern | None = None     # searched in the error message (or the run message)
    description: str = ""

    def matches(self, error_type: str, message: str) -> bool:
        if self.type is not None and not self.type.search(error_type or ""):
            return False
        if self.message is not None and not self.message.search(message or ""):
            return False
        return True


def parse_rules(data, origin: str = "<rules>") -> list[CategoryRule]:
    """Rules from already-loaded YAML: either {rules: [...]} or a bare list."""
    if isinstance(data, dict):
        unknown = set(data) - {"rules"}
        if unknown:
            raise CategoryConfigError(f"{origin}: unknown top-level key(s) {sorted(unknown)}")
        data = data.get("rules")
    if not isinstance(data, list):
        raise CategoryConfigError(f"{origin}: expected a list of rules under 'rules'")
    rules = []
    for position, item in enumerate(data, start=1):
        where = f"{origin}: rule {position}"
        if not isinstance(item, dict):
            raise CategoryConfigError(f"{where}: expected a mapping with name, type and/or message")
        unknown = set(item) - _RULE_KEYS
        if unknown:
            raise CategoryConfigError(f"{where}: unknown key(s) {sorted(unknown)}")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise CategoryConfigError(f"{where}: 'name' must be a non-empty string")
        if item.get("type") is None and item.get("message") is None:
            raise CategoryConfigError(f"{where} ({name}): needs 'type' and/or 'message'")
        rules.append(CategoryRule(name=name.strip(),
                                  type=_compile(item.get("type"), f"{where} ({name}) type"),
                                  message=_compile(item.get("message"), f"{where} ({name}) message"),
                                  description=str(item.get("description") or "")))
    return rules


def _compile(pattern, where: str) -> re.Pattern | None:
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise CategoryConfigError(f"{where}: expected a regex string, got {pattern!r}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise CategoryConfigError(f"{where}: invalid regex {pattern!r}: {exc}") from None


def load_rules(path: str | Path | None = None) -> list[CategoryRule]:
    """Rules from a YAML file; the bundled defaults when path is None."""
    path = Path(path) if path is not None else DEFAULT_RULES_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CategoryConfigError(f"{path}: cannot read categories file: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CategoryConfigError(f"{path}: invalid YAML: {exc}") from None
    return parse_rules(data, origin=str(path))


def categorize(error_type: str, message: str, rules: list[CategoryRule]) -> str:
    for rule in rules:
        if rule.matches(error_type, message):
            return rule.name
    return UNCATEGORIZED


def category_subject(outcome: Outcome) -> tuple[str, str]:
    """The (type, message) pair that rules are matched against, as described in the module doc.

    Without an error record the type is the state, except that an XFAIL is matched as the state its
    known bug shows (NONDET or ZERO when that oracle failed, FAIL otherwise): a tolerance failure
    is a wrong gradient whatever words its message happens to contain."""
    if outcome.error is not None:
        return outcome.error.type or "", outcome.error.message or ""
    state = outcome.state
    if state == State.XFAIL:
        failed = {v.name for v in outcome.oracles if v.verdict == "fail"}
        state = next((s for name, s in _STATE_OF_ORACLE if name in failed), State.FAIL)
    return state, outcome.message or ""


def categorize_outcome(outcome: Outcome, rules: list[CategoryRule]) -> str | None:
    """The run's category; None for runs that passed (PASS, SKIP, UNSUPPORTED).

    A matching rule wins over a category the runner stored in the error record, so that a new
    rules file re-categorizes old results; the stored one is the fallback before 'uncategorized'.
    """
    if outcome.state in _UNCATEGORIZED_STATES:
        return None
    category = categorize(*category_subject(outcome), rules)
    if category == UNCATEGORIZED and outcome.error is not None and outcome.error.category:
        return outcome.error.category
    return category
