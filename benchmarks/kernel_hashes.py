"""Content hashes of generated kernels, to show that a refactor leaves them byte-identical.

    HARNESS_CACHE_DIR=/tmp/before pytest cases --backend ptx -n 2 -q      # on the old commit
    HARNESS_CACHE_DIR=/tmp/after  pytest cases --backend ptx -n 2 -q      # on the new one
    python benchmarks/kernel_hashes.py /tmp/before /tmp/after

Generated files are named by a hash of their text, so equal name sets mean equal bytes when both
runs used the same checkout path and cache path. Runs from different checkouts differ only where
the text names a file (a kernel's docstring names its source file; broadcast kernels live in the
cache folder): the folders of named files are replaced by a placeholder before hashing, and so are
the hashed names of other generated files (whose own text is compared as well).
"""
from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter
from pathlib import Path

_NAME_HASH = re.compile(r"_[0-9a-f]{16}\.py")
_FOLDER = re.compile(r"/[^\s'\"():]*/(?=[\w.-]+\.py)")


def hashes(folder: Path) -> Counter:
    """(kernel stem, sha256 of the normalized text) -> count."""
    out: Counter = Counter()
    for path in sorted(folder.glob("*.py")):
        text = _NAME_HASH.sub("_<HASH>.py", _FOLDER.sub("<DIR>/", path.read_text()))
        out[(_NAME_HASH.sub("", path.name), hashlib.sha256(text.encode()).hexdigest())] += 1
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    before, after = (hashes(Path(d)) for d in argv)
    print(f"{sum(before.values())} kernels before, {sum(after.values())} after")
    for sign, diff in (("-", before - after), ("+", after - before)):
        for (stem, digest), n in sorted(diff.items()):
            print(f"{sign} {stem} {digest[:16]}" + (f" x{n}" if n > 1 else ""))
    same = before == after
    print("identical" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
