"""Load one YAML case file into validated `Case` records.

Three passes, each with its own kind of mistake to catch:

1. YAML -> mappings and lists that remember the line of every key and item (`_CaseYAMLLoader`),
   so that every later error can name a line. Duplicate keys are errors here.
2. JSON Schema (`schema.json`, the single definition of the format) -> structural errors, turned
   into one human sentence each.
3. What a schema cannot say: kernel references resolved on disk (parsed with `ast`, never
   imported), argument names against the kernel's parameters, activity rules, value counts
   against shapes, layouts against shapes, regexes that compile.

Every failure is a `CaseError` naming the project-relative file, the line and the dotted key.
This module knows nothing of numba or numpy.
"""
from __future__ import annotations

import ast
import difflib
import functools
import json
import math
import os
import posixpath
import re
from dataclasses import dataclass, replace
from importlib import resources
from itertools import zip_longest
from pathlib import Path
from typing import Any, NoReturn

import yaml
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match

from harness.cases.allowed_types import ALLOWED_TYPES, describe_allowed
from harness.cases.limits import MAX_ELEMENTS, MAX_KERNEL_FILE_BYTES, EventWalk, StructureProblem, read_case_text
from harness.cases.values import check_document, dtype_problem
from harness.core.gpu_limits import MAX_BLOCK_DIMS, MAX_BLOCK_THREADS
from harness.cases.expand import RECAST_DTYPES
from harness.core.errors import CaseError
from harness.model import (ArgSpec, ArraySpec, Case, CheckSpec, Expectation, FDSpec, KernelRef,
                           LaunchSpec, LaunchStep, LoopStep, ProgramSpec)

ARG_KINDS = ("array", "scalar", "type", "function", "rng_states")
DIFFERENTIABLE_ARRAY_ACTIVITIES = ("duplicated", "duplicated_no_need", "batch_duplicated")
INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint32", "uint64")

KeyPath = tuple  # a path into the document: str keys and int list indices


# ============================================================================ 1. YAML with lines

class _LineDict(dict):
    """A YAML mapping that remembers where it starts and where each of its keys is."""

    def __init__(self, line: int = 1):
        super().__init__()
        self.line = line
        self.key_lines: dict[str, int] = {}


class _LineList(list):
    """A YAML sequence that remembers where it starts and where each of its items is."""

    def __init__(self, line: int = 1):
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []


class _KeyProblem(yaml.constructor.ConstructorError):
    """A mapping-key mistake found while constructing (carries the key path so far)."""

    def __init__(self, problem: str, mark, key_path: list):
        super().__init__(None, None, problem, mark)
        self.key_path = tuple(key_path)


_MERGE_TAG = "tag:yaml.org,2002:merge"

# YAML 1.2 core-schema scalars instead of PyYAML's YAML 1.1 ones: `2e-3` is a float (1.1 reads it
# as a string, and the case format's own examples write tolerances that way), `010` is ten, `on`/`no` are
# strings (a tag named `no` must not turn into False), dates stay strings. Only JSON types remain.
_IMPLICIT_SCALARS = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
     r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+0123456789."),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", ["<"]),
)


class _CaseYAMLLoader(yaml.SafeLoader):
    """SafeLoader that records lines, rejects duplicate and non-string keys, and reads YAML 1.2
    core scalars. Safe: constructs only plain data, never Python objects."""

    yaml_implicit_resolvers: dict = {}   # own table (filled below), not SafeLoader's 1.1 one

    def __init__(self, stream):
        super().__init__(stream)
        self.key_path: list = []         # where construction is, for duplicate-key messages

    def construct_line_mapping(self, node):
        mapping = _LineDict(node.start_mark.line + 1)
        yield mapping
        # Keys brought in by `<<: *anchor` may be overridden by the mapping's own keys (that is
        # what merge keys are for); only the mapping's own keys must be unique.
        own_count = sum(1 for key_node, _ in node.value if key_node.tag != _MERGE_TAG)
        self.flatten_mapping(node)
        first_own = len(node.value) - own_count
        own_lines: dict[str, int] = {}
        for index, (key_node, value_node) in enumerate(node.value):
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                # the offending key is named too: at the document's top level there is no other
                named = key_node.value if isinstance(key_node.value, str) and key_node.value else "(non-text key)"
                raise _KeyProblem(f"keys must be text; quote {key_node.value!r}",
                                  key_node.start_mark, self.key_path + [named])
            if index >= first_own:
                if key in own_lines:
                    raise _KeyProblem(f"duplicate key '{key}' (first given on line "
                                      f"{own_lines[key]})", key_node.start_mark,
                                      self.key_path + [key])
                own_lines[key] = line
            self.key_path.append(key)
            mapping[key] = self.construct_object(value_node, deep=True)
            self.key_path.pop()
            mapping.key_lines[key] = line

    def construct_line_sequence(self, node):
        sequence = _LineList(node.start_mark.line + 1)
        yield sequence
        for index, item_node in enumerate(node.value):
            self.key_path.append(index)
            sequence.append(self.construct_object(item_node, deep=True))
            self.key_path.pop()
            sequence.item_lines.append(item_node.start_mark.line + 1)

    def construct_core_int(self, node):
        text = self.construct_scalar(node)
        sign = -1 if text.startswith("-") else 1
        digits = text.lstrip("+-")
        return sign * int(digits, 0 if digits[:2] in ("0x", "0o") else 10)


for _tag, _pattern, _first in _IMPLICIT_SCALARS:
    _CaseYAMLLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
_CaseYAMLLoader.add_constructor("tag:yaml.org,2002:map", _CaseYAMLLoader.construct_line_mapping)
_CaseYAMLLoader.add_constructor("tag:yaml.org,2002:seq", _CaseYAMLLoader.construct_line_sequence)
_CaseYAMLLoader.add_constructor("tag:yaml.org,2002:int", _CaseYAMLLoader.construct_core_int)

# An explicit tag (`!!float fd`, `!!bool maybe`) must still spell its type the way a plain scalar
# would; tags of types a case has no use for (binary, timestamp, set, omap, pairs) are refused.
_SCALAR_GRAMMAR = {tag: re.compile(pattern) for tag, pattern, _ in _IMPLICIT_SCALARS}


def _checked(construct):
    def construct_checked(loader, node):
        text = loader.construct_scalar(node)
        if not _SCALAR_GRAMMAR[node.tag].match(text):
            raise yaml.constructor.ConstructorError(
                None, None, f"{text!r} is not a valid !!{node.tag.rsplit(':', 1)[1]}",
                node.start_mark)
        return construct(loader, node)
    return construct_checked


def _refuse_tag(loader, node):
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag.replace('tag:yaml.org,2002:', '!!')} is not allowed in a "
        f"case file (only text, numbers, booleans, null, lists and mappings)", node.start_mark)


for _tag, _construct in (("int", _CaseYAMLLoader.construct_core_int),
                         ("float", yaml.SafeLoader.construct_yaml_float),
                         ("bool", yaml.SafeLoader.construct_yaml_bool),
                         ("null", yaml.SafeLoader.construct_yaml_null)):
    _CaseYAMLLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _checked(_construct))
for _tag in ("binary", "timestamp", "set", "omap", "pairs"):
    _CaseYAMLLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


def _read_yaml(path: Path, source: str, cache: bool = False) -> _LineDict:
    text = read_case_text(path, source)                  # a regular file, bounded, UTF-8
    if cache:                                            # a document another process parsed (load_cache.py)
        from harness.cases.load_cache import parsed
        return parsed(text, lambda t: _parse_yaml(t, source), _LineDict)
    return _parse_yaml(text, source)


def _parse_yaml(text: str, source: str) -> _LineDict:
    walk = EventWalk()
    try:
        # First the events, without recursion: depth and expanded size are bounded before any
        # object is built (the composer and constructor recurse, and aliases multiply).
        walk.walk(yaml.parse(text, Loader=_CaseYAMLLoader))
        document = yaml.load(text, Loader=_CaseYAMLLoader)   # one document only
    except StructureProblem as exc:
        raise CaseError(exc.message, file=source, line=exc.line,
                        key=_dotted(exc.key_path) or None) from None
    except _KeyProblem as exc:
        raise CaseError(exc.problem, file=source, line=exc.problem_mark.line + 1,
                        key=_dotted(exc.key_path) or None) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = f"invalid YAML: {exc.problem or exc.context}"
        if exc.context and exc.problem:
            context_line = f", line {exc.context_mark.line + 1}" if exc.context_mark else ""
            message += f" ({exc.context}{context_line})"
        raise CaseError(message, file=source, line=mark.line + 1 if mark else None,
                        key=_dotted(walk.key_path()) or None) from None
    except yaml.reader.ReaderError as exc:                # a character YAML does not allow
        line = text.count("\n", 0, exc.position) + 1
        raise CaseError(f"invalid YAML: character U+{exc.character:04X} is not allowed in a "
                        f"YAML file", file=source, line=line) from None
    except yaml.YAMLError as exc:
        raise CaseError(f"YAML error: {exc}", file=source) from None
    except (ValueError, TypeError, OverflowError) as exc:   # an explicit tag that cannot build its value
        tag = re.search(r"!!?[A-Za-z]", text)
        raise CaseError(f"invalid YAML value: {exc} (an explicit tag such as !!float on a value it "
                        f"cannot convert)", file=source,
                        line=text.count("\n", 0, tag.start()) + 1 if tag else 1) from None
    if document is None:
        raise CaseError("the case file is empty", file=source, line=1)
    if not isinstance(document, _LineDict):
        raise CaseError(f"a case file is a mapping of keys (id, kernel, args, ...), not "
                        f"{_json_type(document)}", file=source, line=1)
    return document


# ============================================================================ key paths and lines

def _dotted(path: KeyPath) -> str:
    """('args', 'x', 'activity') -> 'args.x.activity'; list indices as [i]."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def _line_of(document: Any, path: KeyPath) -> int | None:
    """Line of the deepest key or item along `path` that the document knows."""
    line = getattr(document, "line", None)
    node = document
    for step in path:
        if isinstance(node, _LineDict) and step in node.key_lines:
            line = node.key_lines[step]
        elif isinstance(node, _LineList) and isinstance(step, int) and step < len(node.item_lines):
            line = node.item_lines[step]
        else:
            break
        node = node[step]
    return line


@dataclass(frozen=True)
class _Context:
    """Where errors go: the case file, the (possibly merged) document, the variant if any."""
    root: Path
    source: str
    document: _LineDict
    variant: str | None = None
    variant_line: int | None = None
    overridden: frozenset = frozenset()
    max_elements: int = MAX_ELEMENTS        # a benchmark's own case may be larger than a regression case
    cache: bool = False                     # keep parsed and validated documents on disk (load_cache.py)

    def fail(self, message: str, path: KeyPath = ()) -> NoReturn:
        key, line = _dotted(path), _line_of(self.document, path)
        if self.variant is not None:
            if path and path[0] in self.overridden:
                key = f"variants.{self.variant}.{key}"
            else:
                # The variant made a base key wrong (e.g. a new kernel vs the base's args): point
                # at the variant, and say which base key broke.
                where = f"key '{key}'" if key else "the case"
                message = f"with variant '{self.variant}' applied, {where}: {message}"
                key, line = f"variants.{self.variant}", self.variant_line
        raise CaseError(message, file=self.source, line=line, key=key or None)


# ============================================================================ 2. schema

@functools.cache      # process-wide: the schema is a file of the installed package, fixed for the process
def case_schema() -> dict:
    """The v1 case schema (harness/cases/schema.json)."""
    text = resources.files("harness.cases").joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _is_strict_integer(checker, instance) -> bool:
    # JSON Schema counts 64.0 as an integer; a case means an int, so `shape: [64.0]` is refused.
    return isinstance(instance, int) and not isinstance(instance, bool)


_CaseValidator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_strict_integer))


@functools.cache      # process-wide: built from the fixed schema alone
def _validator() -> Draft202012Validator:
    return _CaseValidator(case_schema())


def _validate(ctx: _Context, document: dict) -> None:
    if ctx.cache:
        from harness.cases.load_cache import known_valid, remember_valid
        if known_valid(document):
            return
    errors = list(_validator().iter_errors(document))
    if not errors:
        if ctx.cache:
            remember_valid(document)
        return
    # Report the mistake a reader meets first in the file; on one line, the most specific one.
    first = min(errors, key=lambda e: (_line_of(document, _blamed_path(e)) or 0, _rank(e)))
    message, path = _describe(first)
    ctx.fail(message, path)


_RANKS = {"additionalProperties": 0, "propertyNames": 0, "required": 2,
          "oneOf": 3, "anyOf": 3, "allOf": 3, "not": 3, "minProperties": 2, "maxProperties": 2}


def _rank(error: ValidationError) -> int:
    if "propertyNames" in error.absolute_schema_path:
        return 0
    return _RANKS.get(error.validator, 1)


def _unknown_keys(error: ValidationError) -> list[str]:
    known = error.schema.get("properties", {})
    patterns = error.schema.get("patternProperties", {})
    unknown = [k for k in error.instance
               if k not in known and not any(re.search(p, k) for p in patterns)]
    lines = getattr(error.instance, "key_lines", {})
    return sorted(unknown, key=lambda k: lines.get(k, 0))


def _blamed_path(error: ValidationError) -> KeyPath:
    path = tuple(error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:
        return path + (error.instance,)        # the offending name itself
    if error.validator == "additionalProperties":
        unknown = _unknown_keys(error)
        return path + (unknown[0],) if unknown else path
    return path


def _describe(error: ValidationError) -> tuple[str, KeyPath]:
    """One human sentence for a schema error, and the key path it is about."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    hint = schema.get("x-messages", {}).get(error.validator)
    path = _blamed_path(error)
    kind, value, instance = error.validator, error.validator_value, error.instance

    if "propertyNames" in error.absolute_schema_path:
        return f"bad name {instance!r}: {hint or error.message}", path
    if kind == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        name = path[-1]
        message = f"unknown key '{name}'"
        if allowed:
            message += f" (allowed: {', '.join(allowed)})"
        close = difflib.get_close_matches(str(name), allowed, n=1)
        if close:
            message += f"; did you mean '{close[0]}'?"
        if schema.get("x-hint"):
            message += f"; {schema['x-hint']}"
        return message, path
    if hint:
        return hint + _got(kind, instance), path
    if kind == "required":
        missing = next(k for k in value if k not in instance)
        return f"missing required key '{missing}'", path + (missing,)
    if kind == "enum":
        options = [str(v) for v in value]
        message = f"bad value {instance!r} (expected one of: {', '.join(options)})"
        close = difflib.get_close_matches(str(instance), options, n=1)
        return message + (f"; did you mean '{close[0]}'?" if close else ""), path
    if kind == "const":
        return f"bad value {instance!r} (expected {value!r})", path
    if kind == "type":
        wanted = value if isinstance(value, list) else [value]
        return (f"expected {' or '.join(_JSON_TYPE_WORDS[t] for t in wanted)}, "
                f"got {_json_type(instance)}"), path
    if kind == "pattern":
        return f"{instance!r} does not match the pattern {value}", path
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        relation = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=",
                    "exclusiveMaximum": "<"}[kind]
        return f"must be {relation} {value} (got {instance!r})", path
    if kind == "minItems":
        return f"needs at least {value} item{'s' * (value != 1)} (got {len(instance)})", path
    if kind == "maxItems":
        return f"takes at most {value} item{'s' * (value != 1)} (got {len(instance)})", path
    if kind == "uniqueItems":
        return "repeats an item; each may appear once", path
    if kind == "minLength":
        return "must not be empty", path
    if kind in ("oneOf", "anyOf") and error.context:
        return _describe(best_match(error.context))
    return error.message, path


def _got(kind: str, instance: Any) -> str:
    """What the reader wrote, appended to a schema hint where it helps."""
    if kind in ("pattern", "enum", "const"):
        return f" (got {instance!r})"
    if kind == "type":
        return f" (got {_json_type(instance)})"
    if kind == "oneOf" and isinstance(instance, dict):
        found = [k for k in ARG_KINDS + ("alias",) if k in instance]
        return f" (found {', '.join(found) if found else 'none'})"
    if kind == "maxProperties" and isinstance(instance, dict):
        return f" (got {', '.join(instance)})"
    return ""


_JSON_TYPE_WORDS = {"object": "a mapping", "array": "a list", "string": "a string",
                    "integer": "an integer", "number": "a number", "boolean": "true or false",
                    "null": "nothing"}


def _json_type(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    return f"a {type(value).__name__} ({value!r})"


# ============================================================================ 3. semantic checks

def _plain(value: Any) -> Any:
    """Strip the line bookkeeping: records carry plain dicts and lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _check_block(ctx: _Context, block: tuple[int, ...] | None) -> None:
    """A block no GPU launches is the case's mistake: say so where it is written."""
    if block is None or not all(isinstance(n, int) for n in block):
        return                                  # the schema names a wrong type
    for axis, (n, most) in enumerate(zip(block, MAX_BLOCK_DIMS)):
        if n > most:
            ctx.fail(f"block dimension {'xyz'[axis]} = {n}; a GPU allows at most {most}", ("launch", "block"))
    threads = math.prod(block)
    if threads > MAX_BLOCK_THREADS:
        ctx.fail(f"a block of {threads} threads; a GPU allows at most {MAX_BLOCK_THREADS} threads per block",
                 ("launch", "block"))


def _dims(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    return tuple(value) if isinstance(value, list) else (value,)


@functools.lru_cache(maxsize=256)      # process-wide: keyed by the file's mtime and size, so an edit misses
def _top_level_functions(path: str, mtime_ns: int, size: int) -> dict[str, tuple[str, ...]]:
    """{name: parameter names} of every top-level `def` in a Python file (keyed by mtime so an
    edited kernel is re-read). Parsing, not importing: loading a case must run no user code."""
    tree = ast.parse(Path(path).read_bytes(), filename=path)
    functions, factories = {}, {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = _parameters(node)
            made = _made_function(node)
            if made is not None:
                factories[node.name] = _parameters(made)
    for node in tree.body:       # `k = make_kernel(...)`: a kernel a factory function defines and returns
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
                and node.value.func.id in factories:
            functions[node.targets[0].id] = factories[node.value.func.id]
    return functions


def _parameters(node) -> tuple[str, ...]:
    a = node.args
    return tuple(p.arg for p in a.posonlyargs + a.args + a.kwonlyargs)


def _made_function(factory):
    """The function a factory defines in its body and returns at its end (`def make(): ... def k(...):
    ... return k`), or None."""
    last = factory.body[-1] if factory.body else None
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Name)):
        return None
    inner = [n for n in factory.body if isinstance(n, ast.FunctionDef) and n.name == last.value.id]
    return inner[-1] if inner else None


def _closest_file(root: Path, relative: str) -> str:
    """'; did you mean 'kernels/elementwise.py'?' for a mistyped kernel file: the Python files of
    the folder it names (or of kernels/ when that folder does not exist either)."""
    folder = (root / relative).parent
    if not folder.is_dir():
        folder = root / "kernels"
    try:
        names = sorted(p.relative_to(root).as_posix() for p in folder.glob("*.py"))[:1000]
    except (OSError, ValueError):
        return ""
    close = difflib.get_close_matches(relative, names, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def _resolve_function(ctx: _Context, reference: str, path: KeyPath,
                      what: str = "kernel") -> tuple[KernelRef, tuple[str, ...]]:
    """'kernels/x.py:f' -> (KernelRef, f's parameter names), checked inside the project root."""
    file_part, _, name = reference.rpartition(":")
    if file_part.startswith("/") or Path(file_part).is_absolute():
        ctx.fail(f"{what} path '{file_part}' is absolute; give it relative to the project root",
                 path)
    relative = posixpath.normpath(file_part)
    try:
        target = (ctx.root / relative).resolve()
        inside = target.is_relative_to(ctx.root)
        is_file = inside and target.is_file()             # a FIFO or device is not a file
    except (OSError, ValueError, RuntimeError) as exc:    # too long, a symlink loop, ...
        ctx.fail(f"cannot resolve {what} path '{file_part}': {exc}", path)
    if relative.startswith("../") or relative == ".." or not inside:
        ctx.fail(f"{what} path '{file_part}' resolves outside the project root", path)
    if not is_file:
        ctx.fail(f"{what} file '{relative}' does not exist{_closest_file(ctx.root, relative)}", path)
    try:
        stat = target.stat()
        if stat.st_size > MAX_KERNEL_FILE_BYTES:
            ctx.fail(f"{what} file '{relative}' is larger than {MAX_KERNEL_FILE_BYTES} bytes", path)
        functions = _top_level_functions(str(target), stat.st_mtime_ns, stat.st_size)
    except SyntaxError as exc:
        ctx.fail(f"{what} file '{relative}' does not parse (line {exc.lineno}: {exc.msg})", path)
    except (RecursionError, MemoryError):
        ctx.fail(f"{what} file '{relative}' is nested too deeply to parse", path)
    except (OSError, ValueError) as exc:
        ctx.fail(f"cannot read {what} file '{relative}': {exc}", path)
    if name not in functions:
        close = difflib.get_close_matches(name, list(functions), n=1)
        ctx.fail(f"no top-level function '{name}' in '{relative}'"
                 + (f"; did you mean '{close[0]}'?" if close else ""), path)
    return KernelRef(relative, name), functions[name]


def _check_arg_names(ctx: _Context, args: dict, kernel: KernelRef,
                     params: tuple[str, ...]) -> None:
    signature = f"{kernel.function}({', '.join(params)})"
    for position, (name, param) in enumerate(zip_longest(args, params)):
        if name is None:
            ctx.fail(f"missing argument '{param}' (position {position}); the kernel is "
                     f"{signature}", ("args",))
        if param is None:
            ctx.fail(f"extra argument '{name}'; the kernel is {signature}", ("args", name))
        if name != param:
            order = " (list the arguments in the kernel's parameter order)" if name in params else ""
            ctx.fail(f"argument {position} is '{name}' but the kernel's parameter {position} is "
                     f"'{param}'{order}; the kernel is {signature}", ("args", name))


def _check_elementwise_args(ctx: _Context, args: dict, kernel: KernelRef,
                            params: tuple[str, ...], style: str) -> None:
    """broadcast/map: `kernel` names the scalar function f; the first argument is the destination
    array (any name), the others are f's operands, named and ordered as f's parameters."""
    names = list(args)
    if not names or "array" not in args[names[0]]:
        ctx.fail(f"the first argument of a {style} launch is its destination and must be an array",
                 ("args", names[0]) if names else ("args",))
    dest, signature = names[0], f"{kernel.function}({', '.join(params)})"
    for position, (name, param) in enumerate(zip_longest(names[1:], params), start=1):
        if name is None:
            ctx.fail(f"missing operand '{param}' (argument {position}); a {style} launch takes the "
                     f"destination '{dest}', then the operands of {signature}", ("args",))
        if param is None:
            ctx.fail(f"extra argument '{name}'; a {style} launch takes the destination '{dest}', "
                     f"then the operands of {signature}", ("args", name))
        if name != param:
            ctx.fail(f"argument {position} is '{name}' but operand {position - 1} of {signature} is "
                     f"'{param}' (after the destination '{dest}', list f's parameters in order)",
                     ("args", name))


def _build_arg(ctx: _Context, name: str, raw: dict) -> ArgSpec:
    path = ("args", name)
    if "alias" in raw:                                      # the buffer of another array argument
        return _build_alias_arg(ctx, name, raw)
    if "rng_states" in raw:                                 # an array of generator states
        return _build_rng_states_arg(ctx, name, raw)
    kind = next(k for k in ARG_KINDS if k in raw)          # the schema allows exactly one
    activity = raw.get("activity", "const")
    width = raw.get("width")

    if activity == "batch_duplicated" and width is None:
        ctx.fail("activity 'batch_duplicated' needs 'width' (the number of shadows)",
                 path + ("activity",))
    if width is not None and activity != "batch_duplicated":
        ctx.fail(f"'width' applies only to activity batch_duplicated (this argument is "
                 f"{activity})", path + ("width",))
    if activity == "active" and kind != "scalar":
        instead = ("duplicated, duplicated_no_need or batch_duplicated" if kind == "array"
                   else "const")
        ctx.fail(f"activity 'active' is for scalar arguments only; use {instead} for this "
                 f"{kind} argument", path + ("activity",))
    if kind in ("type", "function") and activity != "const":
        ctx.fail(f"a {kind} argument is always const (got activity '{activity}')",
                 path + ("activity",))
    # An integer or bool array marked duplicated is deliberately allowed: it is a legitimate
    # expected-error case, and the engine reports it as an ActivityError.

    array = value = dtype = shadow = None
    if kind == "array":
        array = _build_array(ctx, raw["array"], path + ("array",))
    elif kind == "scalar":
        value, dtype = _scalar_value(ctx, raw["scalar"], path + ("scalar",))
    elif kind == "type":
        value = _allowed_type(ctx, raw["type"], path + ("type",))
    else:
        ref, _ = _resolve_function(ctx, raw["function"], path + ("function",), what="function")
        value = str(ref)

    if "shadow" in raw:
        if kind != "array" or activity not in DIFFERENTIABLE_ARRAY_ACTIVITIES:
            ctx.fail(f"'shadow' needs an array argument with activity duplicated, "
                     f"duplicated_no_need or batch_duplicated (this one is a {kind}, {activity})",
                     path + ("shadow",))
    if "alias" in raw.get("shadow", {}):                    # resolved by _resolve_aliases
        if len(raw["shadow"]) > 1:
            ctx.fail("a shadow alias is another argument's buffer: it takes no init or layout",
                     path + ("shadow", "alias"))
        shadow = {"alias": raw["shadow"]["alias"]}
    elif "shadow" in raw:
        shadow = {}
        if "init" in raw["shadow"]:
            # A batch's shadows may be given once (reused for each) or all at once (width x shape).
            shapes = [array.shape] + ([(width,) + array.shape] if width else [])
            shadow["init"] = _build_init(ctx, raw["shadow"]["init"], shapes, path + ("shadow", "init"))
            if isinstance(shadow["init"], dict) and "values" in shadow["init"]:
                problem = _values_range_problem(shadow["init"]["values"],
                                                _run_dtypes(ctx, array.dtype))
                if problem:
                    ctx.fail(problem, path + ("shadow", "init", "values"))
        if "layout" in raw["shadow"]:
            # The shadows' own layout (a Fortran-ordered gradient of a C-ordered array, a strided one)
            where = path + ("shadow", "layout")
            shadow["layout"] = _build_layout(ctx, raw["shadow"]["layout"], array.shape, where)
            if "broadcast" in shadow["layout"]:
                ctx.fail("a shadow cannot be a broadcast view: distinct elements' derivatives would share "
                         "one memory cell", where + ("broadcast",))

    return ArgSpec(name=name, kind=kind, activity=activity, array=array, value=value, dtype=dtype,
                   width=width, shadow=shadow, line=_line_of(ctx.document, path))


def _build_rng_states_arg(ctx: _Context, name: str, raw: dict) -> ArgSpec:
    """`{rng_states: {count, seed, subsequence_start}}`: a const array of `count` states of numba's
    generator (record dtype STATE_DTYPE_NAME), built by harness.cases.inputs as
    numba.cuda.random.create_xoroshiro128p_states builds it."""
    path = ("args", name)
    for key in ("shadow", "width"):
        if key in raw:
            ctx.fail(f"rng_states takes only 'rng_states' and 'activity' (got '{key}')", path + (key,))
    activity = raw.get("activity", "const")
    if activity != "const":
        ctx.fail(f"rng_states are always const: the numbers drawn from them are constants, with no "
                 f"derivative (got activity '{activity}')", path + ("activity",))
    from harness.core.rng_states import STATE_DTYPE_NAME    # here: the loader imports no numpy until it must
    spec = raw["rng_states"]
    init = {"rng_states": {"seed": spec.get("seed", 0), "subsequence_start": spec.get("subsequence_start", 0)}}
    return ArgSpec(name=name, kind="array", activity="const",
                   array=ArraySpec(shape=(spec["count"],), dtype=STATE_DTYPE_NAME, init=init),
                   line=_line_of(ctx.document, path))


def _allowed_type(ctx: _Context, name: str, path: KeyPath) -> str:
    """A `type:` value must be on the allow-list: it is looked up there, never imported."""
    if name not in ALLOWED_TYPES:
        close = difflib.get_close_matches(name, list(ALLOWED_TYPES), n=1)
        ctx.fail(f"'{name}' is not an allowed type ({describe_allowed()})"
                 + (f"; did you mean '{close[0]}'?" if close else ""), path)
    return name


def _build_alias_arg(ctx: _Context, name: str, raw: dict) -> ArgSpec:
    """`{alias: other, activity: ...}`: the very buffer of array argument `other`. Its array spec
    is filled in by `_resolve_aliases` once every argument is built."""
    path = ("args", name)
    activity = raw.get("activity", "const")
    for key in ("shadow", "width"):
        if key in raw:
            ctx.fail(f"an alias argument takes only 'alias' and 'activity' (got '{key}')", path + (key,))
    if activity in ("active", "batch_duplicated"):
        ctx.fail(f"an alias is an array argument: activity '{activity}' does not apply "
                 "(use const, duplicated or duplicated_no_need)", path + ("activity",))
    return ArgSpec(name=name, kind="array", activity=activity, alias=raw["alias"],
                   line=_line_of(ctx.document, path))


def _resolve_aliases(ctx: _Context, args: tuple[ArgSpec, ...]) -> tuple[ArgSpec, ...]:
    """Point every `alias:` (argument or shadow) at an array argument; alias arguments take their
    target's array spec (shape, dtype, init, layout): they are the same memory."""
    by_name = {a.name: a for a in args}
    out = []
    for arg in args:
        for target, key in ((arg.alias, ("alias",)), ((arg.shadow or {}).get("alias"), ("shadow", "alias"))):
            if target is None:
                continue
            if target == arg.name and key == ("alias",):
                ctx.fail("an argument cannot alias itself", ("args", arg.name, "alias"))
            other = by_name.get(target)
            if other is None or other.kind != "array" or other.alias is not None:
                why = ("is not an argument of the case" if other is None else
                       "is itself an alias" if other.alias is not None else f"is a {other.kind}, not an array")
                ctx.fail(f"alias '{target}' {why}; alias names an array argument ({', '.join(by_name)})",
                         ("args", arg.name) + key)
        if arg.alias is not None:
            arg = replace(arg, array=by_name[arg.alias].array)
        out.append(arg)
    return tuple(out)


def _scalar_value(ctx: _Context, raw: dict, path: KeyPath) -> tuple[Any, str]:
    value = raw["value"]
    default = "bool" if isinstance(value, bool) else "int64" if isinstance(value, int) else "float64"
    dtype = raw.get("dtype", default)
    for run_dtype in _run_dtypes(ctx, dtype):
        problem = dtype_problem(value, run_dtype)
        if problem:
            ctx.fail(f"a {run_dtype} scalar cannot hold this value: {problem}", path + ("value",))
    return value, dtype


def _run_dtypes(ctx: _Context, declared: str) -> tuple[str, ...]:
    """The dtypes a value declared as `declared` is used at: a float one is recast to each of the
    case's `dtypes` (see harness/cases/expand.py), anything else keeps its own."""
    dtypes = ctx.document.get("dtypes")
    if dtypes and declared in RECAST_DTYPES:
        return tuple(dtypes)
    return (declared,)


def _values_range_problem(values: Any, dtypes: tuple[str, ...]) -> str:
    """'' when every number of explicit array `values` fits each dtype the array is used at."""
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        for dtype in dtypes:
            if dtype == "bool":
                continue                                    # any number: nonzero is true
            problem = dtype_problem(item, dtype)
            if problem:
                return f"a value does not fit the array's dtype: {problem}"
    return ""


def _build_array(ctx: _Context, raw: dict, path: KeyPath) -> ArraySpec:
    shape = _dims(raw["shape"])                             # always what the kernel sees
    layout = _build_layout(ctx, raw.get("layout"), shape, path + ("layout",))
    # A broadcast view repeats a smaller stored array; explicit values can only describe that.
    stored = layout["broadcast"] if layout and "broadcast" in layout else shape
    init = _build_init(ctx, raw.get("init", "zeros"), [stored], path + ("init",))
    if isinstance(init, dict) and "values" in init:
        problem = _values_range_problem(init["values"], _run_dtypes(ctx, raw["dtype"]))
        if problem:
            ctx.fail(problem, path + ("init", "values"))
    return ArraySpec(shape=shape, dtype=raw["dtype"], init=init, layout=layout)


def _build_init(ctx: _Context, raw: Any, shapes: list[tuple[int, ...]], path: KeyPath) -> Any:
    """Check an init against the shape(s) it may fill; return it as plain data."""
    if isinstance(raw, str):
        return raw
    (how, spec), = raw.items()                              # the schema allows exactly one
    if how == "uniform" and spec[0] > spec[1]:
        ctx.fail(f"uniform bounds are reversed: [{spec[0]}, {spec[1]}]", path + (how,))
    if how == "normal" and spec[1] < 0:
        ctx.fail(f"normal sigma must be >= 0 (got {spec[1]})", path + (how,))
    if how == "values":
        problems = [_values_problem(spec, shape) for shape in shapes]
        if all(problems):                                   # fits none of the allowed shapes
            ctx.fail(problems[0], path + (how,))
    return {how: _plain(spec)}


def _values_problem(values: list, shape: tuple[int, ...]) -> str:
    """'' when `values` fills `shape`: either a flat list of prod(shape) numbers (row-major) or
    nested lists of exactly that shape."""
    needed = math.prod(shape)
    if not any(isinstance(v, list) for v in values):
        if len(values) != needed:
            return (f"values hold {len(values)} element{'s' * (len(values) != 1)} but shape "
                    f"{list(shape)} needs {needed}")
        return ""
    nested = _nested_shape(values)
    if nested is None:
        return "values are ragged (nested lists of different lengths or depths)"
    if nested != shape:
        return f"values have shape {list(nested)} but the array's shape is {list(shape)}"
    return ""


def _nested_shape(values: Any) -> tuple[int, ...] | None:
    if not isinstance(values, list):
        return ()
    inner = {_nested_shape(v) for v in values}
    if len(inner) > 1 or None in inner:
        return None
    return (len(values),) + (inner.pop() if inner else ())


def _build_layout(ctx: _Context, raw: dict | None, shape: tuple[int, ...],
                  path: KeyPath) -> dict | None:
    if raw is None:
        return None
    (how, spec), = raw.items()                              # the schema allows exactly one
    where = path + (how,)
    if how == "strides" and len(spec) != len(shape):
        ctx.fail(f"strides need one entry per dimension: {len(spec)} given, shape "
                 f"{list(shape)} has {len(shape)}", where)
    if how == "transpose" and sorted(spec) != list(range(len(shape))):
        ctx.fail(f"transpose must be a permutation of the axes 0..{len(shape) - 1} "
                 f"(got {list(spec)})", where)
    if how == "broadcast":
        # The stored array `spec` is broadcast to `shape` by numpy's rule: from the last axis,
        # sizes are equal or the stored size is 1.
        fits = len(spec) <= len(shape) and all(
            b in (1, s) for b, s in zip(reversed(spec), reversed(shape)))
        if not fits:
            ctx.fail(f"a stored shape {list(spec)} cannot be broadcast to the array's shape "
                     f"{list(shape)}", where)
    return {how: tuple(spec) if isinstance(spec, list) else spec}


def _build_launch(ctx: _Context, raw: dict | None) -> LaunchSpec:
    raw = raw or {}
    style = raw.get("style", "kernel")
    grid, block, threads = (_dims(raw.get(k)) for k in ("grid", "block", "threads"))
    if threads is not None and grid is not None:
        ctx.fail("give either threads (with an optional block size) or grid and block, not both",
                 ("launch", "threads"))
    if style != "kernel" and (threads is not None or grid is not None):
        ctx.fail(f"a {style} launch runs one thread per destination element; give at most a block size",
                 ("launch", "threads" if threads is not None else "grid"))
    if style == "kernel" and threads is None and (grid is None) != (block is None):
        given, missing = ("grid", "block") if block is None else ("block", "grid")
        ctx.fail(f"launch gives {given} without {missing}; give both, or threads",
                 ("launch", given))
    if style == "kernel" and threads is None and grid is None:
        ctx.fail("a kernel-style launch needs {threads: N} or {grid: G, block: B}", ("launch",))
    _check_block(ctx, block)
    return LaunchSpec(style=style, grid=grid, block=block, threads=threads)


def _check_regex(ctx: _Context, pattern: str | None, path: KeyPath) -> str | None:
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            ctx.fail(f"'match' is not a valid regular expression: {exc}", path)
    return pattern


def _build_check(ctx: _Context, raw: dict | None, arg_names: tuple[str, ...]) -> CheckSpec:
    raw = raw or {}
    fd_raw = raw.get("fd", True)
    fd = None
    if fd_raw is not False:
        fd_raw = {} if fd_raw is True else fd_raw
        fd = FDSpec(directions=fd_raw.get("directions", FDSpec.directions),
                    rtol=_as_float(fd_raw.get("rtol")), atol=_as_float(fd_raw.get("atol")))
    nested = None
    if "nested" in raw:
        nested = _build_nested(ctx, raw["nested"], arg_names)
    sweep = raw.get("block_sweep")
    return CheckSpec(fd=fd, dot=raw.get("dot", True), repeat=raw.get("repeat", 1),
                     zero_guard=raw.get("zero_guard", True), nested=nested,
                     activities=raw.get("activities"),
                     block_sweep=tuple(sweep) if sweep is not None else None,
                     values=_plain(raw["values"]) if "values" in raw else None)


def _as_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _build_nested(ctx: _Context, raw: dict, arg_names: tuple[str, ...]) -> dict:
    path = ("check", "nested")
    ref, _ = _resolve_function(ctx, raw["function"], path + ("function",), what="nested function")
    for name, spec in raw.get("args", {}).items():
        (key, other), = spec.items()                       # shadow: array, or adjoint: array
        for role, arg in (("argument", name), (key, other)):
            if arg not in arg_names:
                where = path + ("args", name) + ((key,) if role == key else ())
                ctx.fail(f"nested {role} '{arg}' is not one of the case's arguments "
                         f"({', '.join(arg_names)})", where)
        if key == "adjoint" and raw["mode"] != "reverse":
            ctx.fail("an Active scalar's adjoint comes back from reverse mode only", path + ("args", name, key))
    return {"function": str(ref), "mode": raw["mode"], "args": _plain(raw.get("args", {}))}


def _build_expect(ctx: _Context, raw: Any, path: KeyPath = ("expect",)) -> Expectation:
    if isinstance(raw, str):                                # 'pass' or 'unsupported'
        return Expectation(kind=raw)
    (kind, body), = raw.items()                             # the schema allows exactly one
    match = _check_regex(ctx, body.get("match"), path + (kind, "match"))
    if kind == "error":
        return Expectation(kind="error", error_type=body["type"], match=match,
                           argument=body.get("argument"), param=body.get("param"))
    if kind == "xfail":
        if body.get("crash") and body.get("state"):
            ctx.fail("an xfail with crash: true ends in the process's death, so it names no failing state",
                     path + (kind, "state"))
        return Expectation(kind="xfail", reason=body["reason"], link=body.get("link"),
                           strict=body.get("strict", True), state=body.get("state"),
                           crash=body.get("crash", False))
    return Expectation(kind="unsupported", match=match)


def _array_elements(arg: ArgSpec) -> int:
    """Elements the harness allocates for one argument: its storage (a strided or offset view
    needs more than its shape, a broadcast one less) and one shape-sized shadow per direction."""
    if arg.array is None or arg.alias is not None:
        return 0                                            # an alias shares its target's memory
    shape, layout = arg.array.shape, arg.array.layout or {}
    elements = math.prod(shape)
    storage = elements
    if "strides" in layout and elements:
        storage = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, layout["strides"]))
    elif "broadcast" in layout:
        storage = math.prod(layout["broadcast"])
    elif "offset" in layout:
        storage = elements + layout["offset"]
    shadows = (arg.width or 0) if arg.activity == "batch_duplicated" else \
        1 if arg.activity in DIFFERENTIABLE_ARRAY_ACTIVITIES else 0
    return storage + shadows * elements


def _check_elements(ctx: _Context, args: tuple[ArgSpec, ...]) -> None:
    total = 0
    for arg in args:
        total += _array_elements(arg)
        if total > ctx.max_elements:
            ctx.fail(f"the case's arrays need more than {ctx.max_elements} elements (with shadows "
                     f"and layouts); a regression case stays small", ("args", arg.name))


def _build_case(ctx: _Context, *, variant: str | None = None, line: int = 1,
                variant_names: tuple[str, ...] = ()) -> Case:
    doc = ctx.document
    program = None
    native = _build_native_kernels(ctx, doc)
    if native and "program" in doc:
        ctx.fail("a program runs through the bundled engine; native kernels (engines.*.kernel) are single "
                 "launches", ("program",))
    if not native and ("program" in doc) == ("kernel" in doc):
        ctx.fail("a case names either a kernel or a program (a sequence of launches), not both"
                 if "program" in doc else "missing required key 'kernel' (or 'program', a sequence of launches)",
                 ("program",) if "program" in doc else ("kernel",))
    if "program" in doc:                                    # a sequence of launches
        args = tuple(_build_arg(ctx, name, raw) for name, raw in doc["args"].items())
        program = _build_program(ctx, doc, args)
        kernel = program.launches()[0].kernel
    elif "kernel" not in doc:                               # native kernels only
        kernel = None
        args = _resolve_aliases(ctx, tuple(_build_arg(ctx, name, raw) for name, raw in doc["args"].items()))
    else:
        kernel, params = _resolve_function(ctx, doc["kernel"], ("kernel",))
        style = (doc.get("launch") or {}).get("style", "kernel")
        if style in ("broadcast", "map"):
            _check_elementwise_args(ctx, doc["args"], kernel, params, style)
        else:
            _check_arg_names(ctx, doc["args"], kernel, params)
        args = _resolve_aliases(ctx, tuple(_build_arg(ctx, name, raw) for name, raw in doc["args"].items()))
    _check_elements(ctx, args)
    modes = tuple(doc.get("modes", Case.modes))
    expect, expect_by_mode = _build_mode_expectations(ctx, doc.get("expect", "pass"), modes)
    check = _build_check(ctx, doc.get("check"), tuple(doc["args"]))
    _check_expected_values(ctx, check, args, modes)
    return Case(
        id=doc["id"], source=ctx.source, kernel=kernel, args=args,
        title=doc.get("title", ""), description=doc.get("description", ""),
        links=tuple(doc.get("links", ())), tags=tuple(doc.get("tags", ())),
        launch=_build_launch(ctx, doc.get("launch")) if program is None else LaunchSpec(),
        program=program, replay=_build_replay(ctx, doc, args, program),
        modes=modes,
        dtypes=tuple(doc["dtypes"]) if "dtypes" in doc else Case.dtypes,
        seed=doc.get("seed", 0),
        check=check, expect=expect, expect_by_mode=expect_by_mode,
        engine_expect={name: _build_engine_expectation(ctx, body["expect"], modes, name)
                       for name, body in doc.get("engines", {}).items() if "expect" in body},
        native=native,
        engine=_plain(doc.get("engine", {})),
        jobs=tuple(_plain(job) for job in doc.get("jobs", ())),
        ptx=_plain(doc.get("ptx", {})),
        variant=variant, variant_names=variant_names, line=line)


def _build_native_kernels(ctx: _Context, doc: dict) -> dict:
    """`engines: {warp: {kernel: ...}}`: each engine's kernel in its own language, whose parameters
    are the case's arguments, in order (harness/adapters/native.py)."""
    native = {}
    for name, body in doc.get("engines", {}).items():
        if "kernel" not in body:
            continue
        where = ("engines", name, "kernel")
        if name == "bundled":
            ctx.fail("the bundled engine's kernel is the case's own `kernel`; engines.NAME.kernel gives an "
                     "adapter's kernel in its own language", where)
        if (doc.get("launch") or {}).get("style", "kernel") != "kernel":
            ctx.fail("a native kernel is launched as written: the case's launch style must be 'kernel'", where)
        ref, params = _resolve_function(ctx, body["kernel"], where)
        _check_arg_names(ctx, doc["args"], ref, params)
        native[name] = ref
    return native


# ============================================================================ second edition: programs, stated values
# Per-mode expectations, expectations a variant may not inherit silently, exact expected values.

_MODE_KEYS = ("primal", "forward", "reverse")


def _build_mode_expectations(ctx: _Context, raw: Any, modes: tuple[str, ...],
                             path: KeyPath = ("expect",)) -> tuple[Expectation, dict | None]:
    """`expect` as one expectation for every run, or keyed by mode: then exactly the modes the case
    runs, so no run falls back on an expectation written for another mode."""
    if not (isinstance(raw, dict) and any(k in raw for k in _MODE_KEYS)):
        return _build_expect(ctx, raw, path), None
    for mode in raw:
        if mode not in modes:
            ctx.fail(f"expect names mode '{mode}', which the case does not run (modes: "
                     f"{', '.join(modes)})", path + (mode,))
    missing = [m for m in modes if m not in raw]
    if missing:
        ctx.fail(f"an expect keyed by mode names every mode the case runs; missing: "
                 f"{', '.join(missing)}", path)
    by_mode = {}
    for mode in modes:
        by_mode[mode] = _build_expect(ctx, raw[mode], path + (mode,))
    return by_mode[modes[0]], by_mode


def _build_engine_expectation(ctx: _Context, raw: Any, modes: tuple[str, ...], engine: str) -> Expectation | dict:
    """`engines: {warp: {expect: ...}}`: one Expectation, or one per mode (a dict mode -> Expectation)
    under the same rules as the case's own `expect`."""
    one, by_mode = _build_mode_expectations(ctx, raw, modes, ("engines", engine, "expect"))
    return one if by_mode is None else by_mode


# Keys that change what is computed: a variant replacing one of them computes something else, so
# a failing expectation of the base case (an error, an xfail, a refusal) cannot carry over unsaid.
_COMPUTATION_KEYS = ("kernel", "launch", "args", "engine", "modes", "program", "replay")


def _check_inherited_expect(ctx: _Context, base: _LineDict, overrides: dict) -> None:
    """An inherited error or refusal is checked by the run itself (a variant that does not raise it
    fails loudly); an inherited xfail is not: it would file any failure of another computation
    under the base's known bug, or (strict: false) hide a pass."""
    inherited = base.get("expect", "pass")
    if "expect" in overrides or not _names_xfail(inherited):
        return
    changed = [k for k in _COMPUTATION_KEYS if k in overrides]
    if changed:
        ctx.fail(f"the variant replaces {', '.join(changed)} but would inherit the base case's xfail "
                 f"({_plain(inherited)!r}), a known bug of the base computation; state the variant's own "
                 f"expect (expect: pass if it passes)")


def _names_xfail(expect: Any) -> bool:
    if not isinstance(expect, dict):
        return False
    return "xfail" in expect or any(_names_xfail(v) for k, v in expect.items() if k in _MODE_KEYS)


def _check_expected_values(ctx: _Context, check: CheckSpec, args: tuple[ArgSpec, ...],
                           modes: tuple[str, ...]) -> None:
    """check.values: each mode run, each name an argument that mode produces, values that fit the
    argument's shape; forward/reverse need the direction the case chose (shadow: {init})."""
    gradient_modes = [m for m in modes if m != "primal"]
    if check.fd is None and not check.dot and gradient_modes and check.nested is None:
        unchecked = [m for m in gradient_modes if m not in (check.values or {})]
        if unchecked:
            ctx.fail(f"with fd: false and dot: false nothing checks the {', '.join(unchecked)} "
                     f"derivative; state its expected values (check.values) or turn an oracle on",
                     ("check",))
    if check.values is None:
        return
    by_name = {a.name: a for a in args}
    chosen = [a.name for a in args if (a.shadow or {}).get("init") is not None]
    for mode in _MODE_KEYS:
        if mode not in check.values:
            continue
        path = ("check", "values", mode)
        if mode not in modes:
            ctx.fail(f"expected {mode} values, but the case does not run {mode} "
                     f"(modes: {', '.join(modes)})", path)
        if mode != "primal" and not chosen:
            what = "direction (tangent)" if mode == "forward" else "cotangent"
            ctx.fail(f"expected {mode} values need the {what} they follow from: give "
                     f"shadow: {{init: ...}} on at least one differentiable array", path)
        for name, values in check.values[mode].items():
            arg = by_name.get(name)
            if arg is None:
                ctx.fail(f"'{name}' is not an argument of the case ({', '.join(by_name)})", path + (name,))
            if mode == "reverse" and arg.kind == "scalar" and arg.activity == "active":
                shape = ()
            elif arg.kind != "array":
                ctx.fail(f"'{name}' is a {arg.kind}: {mode} values are given for arrays"
                         + (" and active scalars" if mode == "reverse" else ""), path + (name,))
            else:
                shape = arg.array.shape
            if mode != "primal" and arg.activity == "const":
                ctx.fail(f"'{name}' is const: it has no {mode} derivative", path + (name,))
            if isinstance(values, list):
                problem = _values_problem(values, shape) if shape else (
                    "" if len(values) == 1 else f"an active scalar's adjoint is one number (got {len(values)})")
                if problem:
                    ctx.fail(problem, path + (name,))


def _build_program(ctx: _Context, doc: dict, args: tuple[ArgSpec, ...]) -> ProgramSpec:
    """`program: {buffers, steps}`: launches over named buffers (the case's arguments and the
    intermediate buffers the program creates). Each launch's `args` name buffers in the kernel's
    parameter order; loops repeat their steps."""
    for key in ("launch",):
        if key in doc:
            ctx.fail("a program gives each launch its own launch configuration (program.steps[i].launch)",
                     (key,))
    for a in args:
        where = ("args", a.name)
        if a.alias is not None or (a.array is not None and a.array.layout):
            ctx.fail("program buffers are plain contiguous arrays (no alias or layout)", where)
        if a.activity in ("batch_duplicated", "duplicated_no_need"):
            ctx.fail(f"activity '{a.activity}' is not available in a program (use duplicated)", where + ("activity",))
        if a.kind in ("type", "function"):
            ctx.fail(f"a program passes buffers and scalars; a {a.kind} argument does not apply", where)
    raw = doc["program"]
    buffers = []
    for name, spec in raw.get("buffers", {}).items():
        path = ("program", "buffers", name)
        if name in doc["args"]:
            ctx.fail(f"buffer '{name}' is also an argument of the case; give each name once", path)
        array = _build_array(ctx, spec["array"], path + ("array",))
        if array.layout:
            ctx.fail("program buffers are plain contiguous arrays (no layout)", path + ("array", "layout"))
        buffers.append(ArgSpec(name=name, kind="array", activity=spec.get("activity", "const"), array=array,
                               line=_line_of(ctx.document, path)))
    names = [a.name for a in args] + [b.name for b in buffers]
    used: set[str] = set()

    def steps_of(raw_steps: list, path: KeyPath) -> tuple:
        out = []
        for index, step in enumerate(raw_steps):
            where = path + (index,)
            if "repeat" in step:
                out.append(LoopStep(step["repeat"], steps_of(step["steps"], where + ("steps",))))
                continue
            kernel, params = _resolve_function(ctx, step["kernel"], where + ("kernel",))
            if len(step["args"]) != len(params):
                ctx.fail(f"{kernel.function}({', '.join(params)}) takes {len(params)} arguments, the step "
                         f"passes {len(step['args'])}", where + ("args",))
            for k, name in enumerate(step["args"]):
                if name not in names:
                    ctx.fail(f"'{name}' is neither an argument of the case nor a program buffer "
                             f"({', '.join(names)})", where + ("args", k))
                used.add(name)
            launch = _build_launch(replace(ctx, document=ctx.document), step["launch"])
            if launch.style != "kernel":
                ctx.fail("a program step is a kernel launch (threads or grid and block)", where + ("launch", "style"))
            out.append(LaunchStep(kernel, launch, tuple(step["args"]), _line_of(ctx.document, where)))
        return tuple(out)

    steps = steps_of(raw["steps"], ("program", "steps"))
    unused = [n for n in names if n not in used]
    if unused:
        ctx.fail(f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} passed to no launch of the program",
                 ("program",))
    return ProgramSpec(buffers=tuple(buffers), steps=steps)


# What the program strategy does not run: refused rather than silently skipped.
_NOT_FOR_PROGRAMS = (("repeat", lambda v: v != 1), ("block_sweep", lambda v: True),
                     ("activities", lambda v: True), ("nested", lambda v: True))


def _check_program_checks(ctx: _Context, doc: dict) -> None:
    what = "a program" if "program" in doc else "the replay protocol"
    for key, used in _NOT_FOR_PROGRAMS:
        if key in (doc.get("check") or {}) and used(doc["check"][key]):
            ctx.fail(f"check.{key} is not available for {what} (its runs do not perform it)", ("check", key))
    if doc.get("ptx"):
        ctx.fail(f"ptx facts are not collected for {what}", ("ptx",))


def _build_replay(ctx: _Context, doc: dict, args: tuple[ArgSpec, ...], program) -> dict | None:
    """`replay: {restore: [...]}`: names of array buffers the user restores before the reverse."""
    if "program" in doc or "replay" in doc:
        _check_program_checks(ctx, doc)
    if "replay" not in doc:
        return None
    names = [a.name for a in args if a.kind == "array"]
    for k, name in enumerate(doc["replay"].get("restore", [])):
        if name not in names:
            ctx.fail(f"replay.restore names '{name}', which is not an array argument of the case "
                     f"({', '.join(names)})", ("replay", "restore", k))
    return {"restore": tuple(doc["replay"].get("restore", ()))}


# ============================================================================ entry point

def _project_relative(path: Path, root: Path) -> str:
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError):             # a symlink loop: name the link itself
        resolved = Path(os.path.abspath(path))
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()                              # outside the project: say it as given


def _merged(base: _LineDict, overrides: _LineDict) -> _LineDict:
    """The base case with the variant's top-level keys replacing the base's (shallow)."""
    merged = _LineDict(base.line)
    for source in (base, overrides):
        for key, value in source.items():
            if key != "variants":
                merged[key] = value
                merged.key_lines[key] = source.key_lines[key]
    return merged


def load_case_file(path: str | os.PathLike, root: str | os.PathLike,
                   seen_ids: dict[str, str] | None = None, *, max_elements: int = MAX_ELEMENTS,
                   cache: bool = False) -> list[Case]:
    """Load one case file: the base case (variant=None, variant_names filled), then one Case per
    variant in file order. Raises CaseError (file, line, dotted key) for any malformed case.

    `seen_ids` ({case id: file}, shared by the files of one session) refuses an id that another
    file already declared, naming both files; this file's id is added to it once it loads.
    `max_elements` raises the allocation limit for callers that build large cases on purpose
    (`harness bench --oracle-scaling`); case files in a suite always get the default. `cache`: reuse
    the parse and schema check of an identical file from an earlier process (load_cache.py; the
    pytest plugin's collection, where every xdist worker loads every file)."""
    path, root = Path(path), Path(root).resolve()
    source = _project_relative(path, root)
    document = _read_yaml(path, source, cache)
    ctx = _Context(root=root, source=source, document=document, max_elements=max_elements, cache=cache)
    check_document(document, ctx.fail)                   # text, numbers: whatever the key
    _validate(ctx, document)
    if seen_ids is not None and seen_ids.get(document["id"], source) != source:
        ctx.fail(f"case id '{document['id']}' is already used by {seen_ids[document['id']]}; "
                 f"every case file needs its own id", ("id",))

    variants = document.get("variants", {})
    cases = [_build_case(ctx, variant_names=tuple(variants))]
    for name, overrides in variants.items():
        variant_line = document["variants"].key_lines[name]
        variant_ctx = replace(ctx, document=_merged(document, overrides), variant=name,
                              variant_line=variant_line, overridden=frozenset(overrides))
        _validate(variant_ctx, variant_ctx.document)      # the merged mapping is a full case
        _check_inherited_expect(variant_ctx, document, overrides)
        cases.append(_build_case(variant_ctx, variant=name, line=variant_line))
    if seen_ids is not None:
        seen_ids[document["id"]] = source
    return cases
