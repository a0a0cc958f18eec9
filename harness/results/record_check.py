"""Validation of results records read back from disk (a results file is untrusted input).

`check_run_record` raises ValueError naming the first field whose value has the wrong shape, so the
reader can skip that record with a warning instead of letting a wrong type crash the report later.
Field types come from the `Outcome` dataclass annotations, so a field added there is checked too.
`printable` makes any text safe to print on a terminal (no escape sequences from a record).
"""
from __future__ import annotations

import dataclasses
import json
import re

from harness.model import ErrorRecord, JobRecord, OracleVerdict, Outcome, WorstEntry
from harness.policy import STATES

MAX_DEPTH = 24              # nesting of any value in a record (metrics are flat by contract)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: object, limit: int = 500) -> str:
    """`text` with control characters (ESC, CR, BEL, C1, ...) shown as escapes, cut at `limit`."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit] + "..."
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")   # lone surrogates
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def too_deep(value, limit: int = MAX_DEPTH) -> bool:
    """True when arrays and objects nest more than `limit` levels (iterative: no recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def has_lone_surrogate(line: str) -> bool:
    """True when a JSON line escapes a lone surrogate (`\\ud800`): valid JSON, but no UTF-8 file
    (the report) can hold it. Surrogate pairs (emoji) are fine."""
    if not _SURROGATE_ESCAPE.search(line):
        return False
    try:
        json.dumps(json.loads(line), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (ValueError, RecursionError):
        return False                          # the caller's own parse reports it
    return False


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# annotation text -> predicate (annotations are strings: model.py uses `from __future__ import annotations`)
_PREDICATES = {
    "str": lambda v: isinstance(v, str),
    "str | None": lambda v: v is None or isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "int | None": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    "float": lambda v: _is_number(v) or v in ("NaN", "Infinity", "-Infinity"),
    "bool": lambda v: isinstance(v, bool),
    "dict": lambda v: isinstance(v, dict),
    "list[str]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "list[dict]": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
    "Any": lambda v: True,
}


# process-wide: derived from a dataclass's fields, which are fixed once its module is imported
_SPECS: dict[type, tuple[tuple[str, bool, object, str], ...]] = {}
_NAMES: dict[type, frozenset[str]] = {}


def _spec(cls):
    """(name, required, predicate, annotation) per field of a record class, computed once."""
    if cls not in _SPECS:
        fields = dataclasses.fields(cls)
        _SPECS[cls] = tuple((f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
                             _PREDICATES.get(str(f.type)), str(f.type)) for f in fields)
        _NAMES[cls] = frozenset(f.name for f in fields)
    return _SPECS[cls]


def _check_fields(data: dict, cls, where: str, skip: tuple[str, ...] = (), closed: bool = False) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
    for name, required, check, annotation in _spec(cls):
        if name in skip:
            continue
        if name not in data:
            if required:
                raise ValueError(f"{where}: missing field '{name}'")
        elif check is not None and not check(data[name]):
            raise ValueError(f"{where}: field '{name}' should be {annotation}, got {type(data[name]).__name__}")
    if closed and not _NAMES[cls].issuperset(data):
        raise ValueError(f"{where} has unknown fields")


def check_run_record(record: dict) -> None:
    """Raise ValueError unless `record` has the shape `Outcome.from_json` and the report expect."""
    _check_fields(record, Outcome, "run record", skip=("oracles", "error", "jobs"))
    if record["state"] not in STATES:
        raise ValueError(f"unknown state {printable(record['state'], 40)!r}")
    for n, arg in enumerate(record.get("args", [])):
        for key in ("name", "kind", "activity", "dtype"):
            if key in arg and not isinstance(arg[key], (str, type(None))):
                raise ValueError(f"args[{n}].{key} should be a string")
        if "shape" in arg and not (isinstance(arg["shape"], list) and all(_is_number(x) for x in arg["shape"])):
            raise ValueError(f"args[{n}].shape should be a list of integers")
    for kernel, facts in record.get("ptx", {}).items():
        if not isinstance(facts, dict) or not all(_is_number(v) for v in facts.values()):
            raise ValueError(f"ptx[{printable(kernel, 60)!r}] should map facts to numbers")
    if not all(isinstance(v, str) for v in record.get("sources", {}).values()):
        raise ValueError("sources should map modes to paths")
    if not all(_PREDICATES["float"](v) for v in record.get("timings", {}).values()):
        raise ValueError("timings should map phases to seconds")
    oracles = record.get("oracles", [])
    if not isinstance(oracles, list):
        raise ValueError("oracles should be a list")
    for n, oracle in enumerate(oracles):
        _check_fields(oracle, OracleVerdict, f"oracles[{n}]", skip=("worst",), closed=True)
        worst = oracle.get("worst", [])
        if not isinstance(worst, list):
            raise ValueError(f"oracles[{n}].worst should be a list")
        for m, entry in enumerate(worst):
            _check_fields(entry, WorstEntry, f"oracles[{n}].worst[{m}]", closed=True)
    if record.get("error") is not None:
        _check_fields(record["error"], ErrorRecord, "error", closed=True)
    jobs = record.get("jobs", [])
    if not isinstance(jobs, list):
        raise ValueError("jobs should be a list")
    for n, job in enumerate(jobs):
        _check_fields(job, JobRecord, f"jobs[{n}]", closed=True)
