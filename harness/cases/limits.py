"""What loading one case file may cost, in one place, and the reading that enforces it.

A case file is read only if it is a regular file (a FIFO would hang the reader, a symlink to
/dev/zero would read until memory runs out) and at most MAX_FILE_BYTES long. Before the YAML is
built into Python objects, its event stream is walked once, without recursion, to bound nesting
and the node count after alias expansion (a few hundred bytes of nested aliases can otherwise
expand to billions of nodes). Every refusal is a CaseError naming the file, and the line and key
where one exists.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml

from harness.core.errors import CaseError

MAX_FILE_BYTES = 1 << 20         # the largest shipped case is under 3 KB
MAX_NODES = 100_000              # YAML nodes after alias expansion (scalars, lists, mappings)
MAX_DEPTH = 32                   # nested lists/mappings; `values` of a 3-D array need 8 or so
MAX_KEY_CHARS = 128              # a mapping key (argument, variant, option names)
MAX_TEXT_CHARS = 65_536          # any one string value
MAX_ELEMENTS = 1 << 24           # array elements one case allocates (arguments, shadows, views)
MAX_KERNEL_FILE_BYTES = 4 << 20  # a kernel file the loader parses (with ast) for its functions


def read_case_text(path: Path, source: str) -> str:
    """The file's text: a regular file of at most MAX_FILE_BYTES, in UTF-8."""
    try:
        info = os.stat(path)                            # follows symlinks: judge the target
        if not stat.S_ISREG(info.st_mode):
            raise CaseError(f"not a regular file ({_file_kind(info.st_mode)}); a case file is a "
                            f"plain .yaml file", file=source)
        _check_size(info.st_size, source)
        # O_NONBLOCK: should the path become a FIFO after the check, open() must not wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise CaseError("not a regular file (it changed while being opened)", file=source)
            data = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError) as exc:                  # ValueError: a NUL in the path
        raise CaseError(f"cannot read the case file: {getattr(exc, 'strerror', None) or exc}",
                        file=source) from None
    _check_size(len(data), source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CaseError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} "
                        f"({exc.reason})", file=source, line=line) from None


def _check_size(size: int, source: str) -> None:
    if size > MAX_FILE_BYTES:
        raise CaseError(f"the case file is larger than {MAX_FILE_BYTES} bytes; case files "
                        f"describe inputs, they do not hold bulk data", file=source)


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


class StructureProblem(Exception):
    """A limit broken while walking the events; carries the line and the key path so far."""

    def __init__(self, message: str, line: int, key_path: tuple):
        super().__init__(message)
        self.message, self.line, self.key_path = message, line, key_path


class EventWalk:
    """Walks a YAML event stream without recursion: bounds nesting depth and the node count after
    alias expansion, and always knows the key path (for errors raised mid-stream, such as a YAML
    syntax error, which then name the key they occur under)."""

    def __init__(self):
        self.frames: list[list] = []     # [is_mapping, anchor, size, key or index, expecting_key]
        self.anchor_sizes: dict[str, int] = {}
        self.open_anchors: set[str] = set()
        self.nodes = 0

    def key_path(self) -> tuple:
        path = []
        for is_mapping, _, _, where, expecting_key in self.frames:
            if where is not None and not (is_mapping and expecting_key):
                path.append(where)
        return tuple(path)

    def walk(self, events) -> None:
        for event in events:
            self.step(event)

    def step(self, event) -> None:
        line = event.start_mark.line + 1 if event.start_mark else 0
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(self.frames) >= MAX_DEPTH:
                raise StructureProblem(f"nested deeper than {MAX_DEPTH} levels", line,
                                       self.key_path())
            self._count(1, line)
            if event.anchor:
                self.open_anchors.add(event.anchor)
            is_mapping = isinstance(event, yaml.MappingStartEvent)
            self.frames.append([is_mapping, event.anchor, 1, None if is_mapping else 0, True])
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            _, anchor, size, _, _ = self.frames.pop()
            self._finish(anchor, size, None)
        elif isinstance(event, yaml.ScalarEvent):
            self._count(1, line)
            self._finish(event.anchor, 1, event.value)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in self.open_anchors:
                raise StructureProblem(f"alias *{event.anchor} refers to a node that contains it",
                                       line, self.key_path())
            size = self.anchor_sizes.get(event.anchor, 1)   # unknown: the composer will say so
            self._count(size, line)
            self._finish(None, size, None)

    def _count(self, size: int, line: int) -> None:
        self.nodes += size
        if self.nodes > MAX_NODES:
            raise StructureProblem(f"more than {MAX_NODES} YAML nodes once aliases are expanded "
                                   f"(an alias bomb?)", line, self.key_path())

    def _finish(self, anchor: str | None, size: int, scalar: str | None) -> None:
        """A complete node (of `size` expanded nodes) was read: credit its parent, and advance
        the parent's key/value or index bookkeeping."""
        if anchor:
            self.anchor_sizes[anchor] = size
            self.open_anchors.discard(anchor)
        if not self.frames:
            return
        frame = self.frames[-1]
        frame[2] += size
        if frame[0]:                                        # mapping: key, then value
            if frame[4]:
                frame[3] = scalar if scalar is not None else "?"
            frame[4] = not frame[4]
        else:
            frame[3] += 1
