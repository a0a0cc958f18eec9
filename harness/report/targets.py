"""Output files a command is asked to write (--results, --html, -o): refused at once, in one line,
when they cannot work. The report's command and the session's output both check their targets
here, so the report does not depend on the session."""
from __future__ import annotations

import os
import stat
from pathlib import Path


class OutputOptionError(ValueError):
    """A --results or --html value that cannot work; the message is one line for the user."""


def writable_target(path: Path, option: str) -> None:
    """Refuse a directory, a symlink, a device or FIFO, or a place that cannot be written."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    except OSError as exc:
        raise OutputOptionError(f"{option} {path}: {exc.strerror}") from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise OutputOptionError(f"{option} {path} is a directory; give a file path")
        if stat.S_ISLNK(mode):
            raise OutputOptionError(f"{option} {path} is a symbolic link; give the file itself")
        if not stat.S_ISREG(mode):
            raise OutputOptionError(f"{option} {path} is not a regular file (a device, FIFO or socket)")
        if not os.access(path, os.W_OK):
            raise OutputOptionError(f"{option} {path} is not writable")
        return
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise OutputOptionError(f"{option} {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputOptionError(f"{option} {path}: {folder} is not writable")


def check_report_target(path: str | os.PathLike, option: str = "-o") -> None:
    writable_target(Path(path), option)
