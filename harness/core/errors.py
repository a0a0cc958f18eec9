"""Every error the harness raises on purpose.

Case expectations name errors by class name (`expect: {error: {type: KernelError}}`), so these
names are part of the user-facing contract: rename nothing.
"""
from __future__ import annotations

import re

# terminal escapes (numba colours its errors: ESC [ 1 m) and other control characters but newline
# and tab: messages travel into case files and reports, where YAML and HTML reject or garble them
_TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")


def plain_text(message: str) -> str:
    """The message without terminal colour codes or other control characters."""
    return _TERMINAL_ESCAPE.sub("", message)


class HarnessError(Exception):
    """Base class of every deliberate harness error."""


class CaseError(HarnessError):
    """A malformed case file. Carries the file, line and offending key."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 key: str | None = None):
        self.file, self.line, self.key = file, line, key
        where = file or "<case>"
        if line is not None:
            where += f":{line}"
        if key:
            where += f": key '{key}'"
        super().__init__(f"{where}: {message}")
        self.bare_message = message


class UnsupportedError(HarnessError):
    """The AD transform refuses a construct. Always names the kernel's file and line."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None):
        self.file, self.line = file, line
        where = f"{file}:{line}: " if file and line else (f"{file}: " if file else "")
        super().__init__(f"{where}{message}")


class ActivityError(HarnessError):
    """An activity that cannot apply to an argument (e.g. an integer array marked duplicated)."""

    def __init__(self, message: str, *, argument: int | None = None, param: str | None = None):
        self.argument, self.param = argument, param
        super().__init__(message)


class MixedActivityError(ActivityError):
    """A packed argument (one kernel argument carrying several values) mixes activities."""


class KernelError(HarnessError):
    """A launch was refused before compiling, e.g. a non-isbits argument."""

    def __init__(self, message: str, *, argument: int | None = None, param: str | None = None):
        self.argument, self.param = argument, param
        super().__init__(message)


class NestedCompilationError(HarnessError):
    """A nested compile job (device-side autodiff) could not be built."""


class LaunchTimeoutError(HarnessError):
    """A run went past its time limit (a hung kernel, a barrier some threads never reach)."""


class KernelFaultError(HarnessError):
    """A kernel faulted while running: an out-of-bounds access, an illegal address, a trap."""


class EngineInternalError(UnsupportedError):
    """A bug of the AD engine itself: an exception it did not mean to raise (an IndexError in its
    lowering, ...), turned into a refusal at its public entry points (harness/engine/guard.py) so
    that no crash leaves the engine. It is a refusal a caller can catch as UnsupportedError, but its
    message says it is an engine bug and not a limit, and the verdicts never count it as an expected
    refusal. The original exception is chained (`__cause__`)."""
