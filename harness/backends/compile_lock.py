"""One compile of a kernel at a time across the processes of a suite (xdist workers).

The cuda backend compiles with numba's on-disk cache. Two workers that need the same kernel at
the same time would both miss the cache and both compile it; holding an exclusive lock per
function (its file's contents, line and name) while compiling makes the second wait for the
first and then load the kernel from the cache. Per function rather than per signature: numba
keeps one index file per function, and two processes saving different signatures of one
function at once can lose one of the entries (a compile in the next, warm, run).
"""
from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from pathlib import Path

from harness.backends.compile_log import function_key


def lock_dir() -> Path:
    from harness.core.paths import locks_dir
    return locks_dir()


@contextmanager
def compiling(pyfunc):
    """Hold the function's lock for the block (no lock where fcntl is missing or the folder is not
    writable: then concurrent compiles are merely duplicated, as before)."""
    try:
        import fcntl
        name = hashlib.sha256(function_key(pyfunc).encode()).hexdigest()[:24]
        fd = os.open(lock_dir() / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                          # closing releases the lock
