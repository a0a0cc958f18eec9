"""`--shard K/N`: run the K-th of N deterministic slices of the suite, for CI matrices and several
machines. A slice is a set of whole case files (a file's runs share compiled kernels), chosen by
position in the sorted list of collected files, so every file lands in exactly one shard whatever
the machine. `harness report` merges the shards' results files into one report (docs/gpu.md).
"""
from __future__ import annotations

import pytest


def parse_shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(p) for p in text.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard {text!r}: expected K/N, e.g. 2/4") from None
    if not (n >= 1 and 1 <= k <= n):
        raise pytest.UsageError(f"--shard {text!r}: need 1 <= K <= N")
    return k, n


def pytest_addoption(parser):
    parser.getgroup("harness").addoption(
        "--shard", default=None, metavar="K/N",
        help="run only the K-th of N slices of the collected case files (1-based)")


def pytest_configure(config):
    if config.getoption("--shard"):
        parse_shard(config.getoption("--shard"))


def select(paths: list[str], k: int, n: int) -> set[str]:
    """The case files of shard k of n: every n-th file of the sorted list, starting at k - 1."""
    ordered = sorted(set(paths))
    return {p for i, p in enumerate(ordered) if i % n == k - 1}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    text = config.getoption("--shard")
    if not text:
        return
    k, n = parse_shard(text)
    keep = select([str(item.path) for item in items], k, n)
    chosen = [item for item in items if str(item.path) in keep]
    dropped = [item for item in items if str(item.path) not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = chosen
