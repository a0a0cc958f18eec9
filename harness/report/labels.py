"""Names of the two numbers in an oracle's worst entries (WorstEntry.ad and .fd): only the
finite-difference oracles compare AD with FD; the others compare two AD results. Shared by the
HTML report and the terminal account of a failure (harness/report/explain.py)."""
from __future__ import annotations

# What the two numbers of a worst entry are, per oracle: only the FD oracles compare AD with FD.
_PAIR_LABELS = {
    "fd-forward": ("AD", "FD"),
    "fd-reverse": ("AD", "FD"),
    "dot": ("reverse <J^T w, v>", "forward <w, J v>"),
    "nondet": ("one launch", "another launch"),
}


def pair_labels(oracle_name: str) -> tuple[str, str]:
    """(first, second) column names of an oracle's worst entries; relation oracles compare a
    variant launch with the reference launch."""
    if oracle_name in _PAIR_LABELS:
        return _PAIR_LABELS[oracle_name]
    if oracle_name.startswith("rel-"):
        return "variant", "reference"
    return "value", "reference"
