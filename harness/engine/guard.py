"""The engine's last line of defence: no exception but a refusal leaves its public entry points.

Every limit of the engine is an UnsupportedError raised where the construct is recognised, naming
the kernel's file and line. An exception the engine did not mean to raise (an IndexError in a
lowering, a KeyError in an analysis) is an engine bug; without this guard it would leave the engine
as a crash the user cannot place. `internal_errors_refused` turns it into an EngineInternalError:
a refusal (callers that handle UnsupportedError keep working), whose message says plainly that it
is a bug of the engine and not a limit, names the kernel line being lowered when it failed and the
engine line that raised, and chains the original exception with its whole traceback.

The errors the engine raises on purpose (every HarnessError: refusals, the launch contract's
ActivityError, KernelError, ...) pass through unchanged, as do MemoryError and interrupts.
"""
from __future__ import annotations

import ast
import os
import traceback
from contextlib import contextmanager

from harness.core.errors import EngineInternalError, HarnessError, UnsupportedError, plain_text

ENGINE_DIR = os.path.dirname(os.path.abspath(__file__))
BUG_MARK = "internal error of the AD engine (an engine bug, not a limit of what it can differentiate)"


def _kernel_location(tb) -> tuple[str | None, int | None]:
    """The kernel file and line the engine was working on when `tb` was raised: the innermost
    frame holding a syntax node (a Python AST node) or an IR statement with a line, and the
    innermost frame at or above it that knows the file (a KernelSource, a KernelIR, an inlined
    statement's own file)."""
    frames = [f for f, _ in traceback.walk_tb(tb)]
    line, file = None, None
    for frame in reversed(frames):               # innermost first
        for value in list(frame.f_locals.values()):
            if line is None:
                if isinstance(value, (ast.stmt, ast.expr)) and getattr(value, "lineno", None):
                    line = value.lineno
                elif _is_ir_statement(value):
                    line = value.line
                    file = getattr(value, "file", None) or file
            if line is not None and file is None:
                file = _file_of(value)
        if line is not None and file is not None:
            break
    return file, line


def _is_ir_statement(value) -> bool:
    return type(value).__module__.endswith("engine.ir") and isinstance(getattr(value, "line", None), int)


def _file_of(value) -> str | None:
    for candidate in (value, getattr(value, "src", None)):
        file = getattr(candidate, "file", None)
        if isinstance(file, str) and type(candidate).__module__.startswith("harness.engine"):
            return file
    return None


def _raising_frame(tb) -> str:
    """The innermost frame inside the engine (where the bug is), else the innermost one."""
    frames = traceback.extract_tb(tb)
    inside = [f for f in frames if os.path.abspath(f.filename).startswith(ENGINE_DIR)]
    f = (inside or frames)[-1]
    return f"{os.path.relpath(f.filename, os.path.dirname(ENGINE_DIR))}:{f.lineno} in {f.name}"


def internal_error(exc: BaseException, kernel_file: str | None, kernel_line: int | None,
                   what: str) -> EngineInternalError:
    file, line = _kernel_location(exc.__traceback__)
    file, line = file or kernel_file, line or kernel_line
    message = (f"{BUG_MARK} while {what}: {type(exc).__name__}: {plain_text(str(exc))} (raised at "
               f"{_raising_frame(exc.__traceback__)}). Please report it with this kernel; the original "
               "exception and its traceback are chained below")
    return EngineInternalError(message, file=file, line=line)


def _where(fn) -> tuple[str | None, int | None]:
    code = getattr(fn, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else (None, None)


@contextmanager
def internal_errors_refused(fn, what: str):
    """Run the body; an unexpected exception becomes an EngineInternalError about kernel `fn`."""
    try:
        yield
    except (HarnessError, MemoryError):
        raise
    except Exception as exc:
        file, line = _where(fn)
        raise internal_error(exc, file, line, what) from exc


def _is_numba_error(exc: BaseException) -> bool:
    try:
        from numba.core.errors import NumbaError
    except ImportError:                          # pragma: no cover - numba is a dependency
        return False
    return isinstance(exc, NumbaError)


def _raised_inside_numba(exc: BaseException) -> bool:
    """numba's lowering sometimes fails with a plain exception rather than a NumbaError (in-place
    arithmetic on an array view: KeyError <ufunc 'add'>); raised from numba's own code while it
    compiles the user's unchanged kernel, that is numba's refusal too."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and any(part in frames[-1].filename.replace(os.sep, "/")
                                for part in ("/numba/", "/numba_cuda/"))


@contextmanager
def numba_refusals_named(fn):
    """numba.cuda's own compile of the user's kernel (a primal launch): a kernel numba rejects is
    numba's refusal, said so, not an engine bug."""
    try:
        yield
    except Exception as exc:
        if isinstance(exc, HarnessError) or not (_is_numba_error(exc) or _raised_inside_numba(exc)):
            raise
        file, line = _where(fn)
        loc = getattr(exc, "loc", None)
        line = getattr(loc, "line", None) or line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnsupportedError(f"numba.cuda itself refuses to compile kernel {getattr(fn, '__name__', fn)} "
                               f"({type(exc).__name__}: {first})", file=file, line=line) from exc
