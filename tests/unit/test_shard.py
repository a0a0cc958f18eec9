"""--shard K/N: every case file in exactly one shard, deterministically."""
from __future__ import annotations

import subprocess
import sys

import pytest

from harness.session.shard import parse_shard, select
from tests.conftest import ROOT


def test_shards_partition_the_files():
    paths = [f"cases/c{i}.yaml" for i in range(11)] + ["cases/c3.yaml"]
    shards = [select(paths, k, 3) for k in (1, 2, 3)]
    assert set().union(*shards) == set(paths)
    assert sum(len(s) for s in shards) == len(set(paths))
    assert select(list(reversed(paths)), 2, 3) == shards[1], "independent of collection order"


@pytest.mark.parametrize("bad", ["3", "0/2", "3/2", "a/b", "1/0"])
def test_bad_shard_is_a_usage_error(bad):
    with pytest.raises(pytest.UsageError, match="--shard"):
        parse_shard(bad)


def test_shard_option_selects_whole_case_files(tmp_path):
    def collected(shard):
        out = subprocess.run([sys.executable, "-m", "pytest", "cases", "--backend", "ptx", "--collect-only", "-q",
                              "-p", "no:cacheprovider", "--shard", shard, "--results", str(tmp_path / "r.jsonl"),
                              "--html", str(tmp_path / "r.html")],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
        return {line.split("::")[0] for line in out.stdout.splitlines() if "::" in line}
    one, two = collected("1/2"), collected("2/2")
    assert one and two and not (one & two)
    assert one | two == {str(p.relative_to(ROOT)) for p in (ROOT / "cases").glob("*.yaml")}
