"""What a process compiled: one record per backend.compile call, for the suite profile.

Each record has a content key (the kernel's file contents, its name, the argument types and the
target configuration), so the plugin can tell how many distinct kernels a suite compiles and how
often the same one was compiled again, in one worker or in several; the seconds it took; where
it came from (which part of a run asked for it: the run's own launch, the gradient oracles, the
activity relations, the nondeterminism oracle); and how it was served (compiled, loaded from an
on-disk cache, or reused from this process's memo).
"""
from __future__ import annotations

import ast
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

# Which module of the harness asked for a compile, by the first matching frame (innermost first).
_PHASES = (("relations.py", "relations"), ("nondet.py", "nondet"), (f"{os.sep}oracles{os.sep}", "oracles"),
           ("primal_reference.py", "oracles"), ("case_values.py", "oracles"))


@dataclass
class CompileRecord:
    key: str           # content key: same key, same kernel
    name: str          # the Python function's name
    seconds: float
    phase: str         # run | oracles | relations | nondet
    served: str        # compiled | disk (numba's or the PTX cache) | memo (this process already had it)
    file_key: str = "" # the key by file, without code sharing: several per key when generated files share code


# process-wide: keyed by (path, mtime, size), so a rewritten file misses; a digest is a fact of the bytes
_file_digests: dict[tuple, str] = {}
_code_digests: dict[tuple, str] = {}


def _file_digest(path: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return "?"
    memo = (path, stat.st_mtime_ns, stat.st_size)
    if memo not in _file_digests:
        with open(path, "rb") as fh:
            _file_digests[memo] = hashlib.sha256(fh.read()).hexdigest()[:16]
    return _file_digests[memo]


def _generated(path: str) -> bool:
    """A module the engine (or a relation) generated: a content-addressed file in its cache folder."""
    from harness.engine.runtime.cache import cache_dir
    try:
        return Path(path).resolve().parent == cache_dir().resolve()
    except OSError:
        return False


def _code_digest(path: str) -> str | None:
    """A digest of a generated module's code: its syntax tree without the module docstring (which
    lists the activities and the kernel's path, and so tells apart modules whose code is the same:
    a DuplicatedNoNeed array the kernel never writes generates the Duplicated array's code) and
    without comments or line numbers. None for any other file."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    memo = (path, stat.st_mtime_ns, stat.st_size)
    if memo not in _code_digests:
        digest = None
        if _generated(path):
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            body = tree.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                tree.body = body[1:]
            digest = hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]
        _code_digests[memo] = digest
    return _code_digests[memo]


def shared_code_key(pyfunc) -> str | None:
    """A key that generated functions with the same code share, whichever file holds them (so one
    compile serves both); None for everything else (kernels from case files, closures), which
    are keyed by the function object."""
    code = getattr(pyfunc, "__code__", None)
    if code is None or getattr(pyfunc, "__closure__", None) is not None:
        return None
    digest = _code_digest(code.co_filename)
    return None if digest is None else f"code:{digest}:{pyfunc.__qualname__}"


_SHARED_DOC = '"""Generated code, shared by the generated modules whose code is this (compile_log.shared_function)."""'
# process-wide: keyed by a hash of the generated code, which numba compiles once per process anyway
_shared: dict[str, object] = {}


def shared_function(pyfunc):
    """The function to compile for `pyfunc`: for a generated function (shared_code_key), the same
    function in a copy of its module whose docstring is replaced by a fixed one (line numbers kept),
    written content-addressed beside it. Every generated module with the same code (in this process,
    in another worker, in a later session) then compiles one file, so numba's on-disk cache and the
    compile lock serve them all whichever asks first. Anything else: `pyfunc` itself."""
    key = shared_code_key(pyfunc)
    if key is None:
        return pyfunc
    if key not in _shared:
        from harness.engine.runtime.cache import load_function, write_module
        path = pyfunc.__code__.co_filename
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        lines = text.splitlines(keepends=True)
        body = ast.parse(text).body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            first, last = body[0].lineno - 1, body[0].end_lineno
            lines[first:last] = [_SHARED_DOC + "\n"] + ["\n"] * (last - first - 1)
        stem = Path(path).stem.rsplit("_", 1)[0]
        _shared[key] = load_function(write_module(f"{stem}__shared", "".join(lines)), pyfunc.__name__)
    return _shared[key]


def function_key(pyfunc) -> str:
    """The function's file contents, first line and qualified name: the same in every process."""
    code = getattr(pyfunc, "__code__", None)
    if code is None:
        return repr(pyfunc)
    return f"{_file_digest(code.co_filename)}:{code.co_firstlineno}:{pyfunc.__qualname__}"


def content_key(pyfunc, signature, config, by_file: bool = False) -> str:
    """The same kernel source, types and target configuration give the same key in every process
    (generated functions: the same code, whatever their docstrings say; `by_file`: the same file)."""
    types = None if signature is None else tuple(str(t) for t in signature)     # None: typed at launch
    function = function_key(pyfunc) if by_file else shared_code_key(pyfunc) or function_key(pyfunc)
    text = f"{function}|{types}|{config!r}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def phase_of_caller() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        for marker, phase in _PHASES:
            if marker in filename:
                return phase
        frame = frame.f_back
    return "run"


class CompileLog:
    """The compile records of one process (one per backend instance)."""

    def __init__(self):
        self.records: list[CompileRecord] = []

    def add(self, key: str, name: str, seconds: float, phase: str, served: str, file_key: str = "") -> None:
        self.records.append(CompileRecord(key, name, seconds, phase, served, file_key or key))

    def since(self, start: int) -> list[CompileRecord]:
        return self.records[start:]

