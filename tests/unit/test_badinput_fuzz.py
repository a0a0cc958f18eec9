"""Bad-input fuzzer for the case loader: mutants of the real cases/ files, with fixed seeds.

Each mutant either loads, or fails with the loader's CaseError naming the file, the line and (for
anything below the top level of the document) the key. No other exception may escape, and nothing
invalid may be accepted. "Invalid" is decided here, by checks written independently of the loader
(numpy's dtype ranges, the documented limits, the files on disk), on the Case records it returns.

Mutations are structural (delete, replace, duplicate, wrap or deeply nest a node of the parsed
document, then dump it again) and byte-wise (bit flips, deleted or repeated spans, inserted tokens
such as NUL, bad UTF-8, YAML tags, anchors and aliases, numbers replaced by 64.0, .nan, 300, 1e309,
words replaced by other keys or by dotted names such as os._exit).

    python tests/unit/test_badinput_fuzz.py [N]      # prints the counts (files, accepted, rejected by kind)
"""
from __future__ import annotations

import math
import random
import re
import sys
from collections import Counter
from dataclasses import fields, is_dataclass
from pathlib import Path

import numpy as np
import yaml

from harness.cases import CaseError, load_case_file
from harness.cases.limits import MAX_ELEMENTS

ROOT = Path(__file__).resolve().parents[2]
CASE_FILES = sorted((ROOT / "cases").glob("*.yaml"))
MUTANTS = 1200                  # per CI run
SEED = 20261130                 # fixed: a failure reproduces with the mutant's label

# ----------------------------------------------------------------------------- mutations

NUMBERS = ["64.0", "8.0", "0", "-1", "1", "300", "-129", "256", "65536", "1e309", "-1e309", "1e39",
           ".nan", ".inf", "-.inf", "99999999999999999999", "9223372036854775808", "0x10", "0o17",
           "1_000", "true", "null", "2.5", "1e-320", "16777217", "4096"]
WORDS = ["os._exit", "time.sleep", "float", "numpy.float64", "numpy.load", "numba.float32", "int",
         "duplicated", "active", "const", "batch_duplicated", "width", "shape", "dtype", "init",
         "values", "layout", "strides", "broadcast", "offset", "transpose", "alias", "shadow",
         "threads", "grid", "block", "style", "map", "broadcast", "kernels/../../etc/passwd.py:f",
         "/etc/passwd.py:f", "kernels/elementwise.py:nope", "uint8", "bool", "complex64", "float16",
         "variants", "id", "expect", "error", "xfail", "check", "fd", "rtol", "nested", "jobs",
         "ptx", "modes", "dtypes", "seed", "tags", "links", "title", "\u00e9t\u00e9", "x" * 300]
TOKENS = [b"\x00", b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x1b[31m",
          b"\x07", b"\x7f", b"\xc2\x9b", b"\t", b"\r", b"\r\n", b"\n", b" ", b"  ", b"&a ", b"*a",
          b"*zz", b" &b [*b]", b"<<: *a\n", b"!!python/object/apply:os.system ['true'] ",
          b"!!binary aGk= ", b"!!float ", b"!!int ", b"!!bool ", b"!!null ", b"!!str ",
          b"!!timestamp ", b"!!set ", b"!!omap ", b"!custom ", b"{", b"}", b"[", b"]]]", b"'",
          b'"', b'"\\ud800"', b'"\\0"', b'"\\x9b"', b"---\n", b"...\n", b"%YAML 1.1\n", b"? ",
          b": ", b"- ", b"#", b",", b"|\n", b">-\n", b"\\", b"[" * 200, b"{a: " * 60]
INTERESTING = [None, True, False, 0, -1, 1, 64.0, 8.0, 2.5, 300, -129, 2 ** 63, 2 ** 70, float("nan"),
               float("inf"), float("-inf"), 1e39, "", "x" * 5000, "a\x00b", "a\x1bb", "\ud800",
               "bad \udc80", "os._exit", "time.sleep", "float", "numpy.int64", "kernels/x.py:f",
               "../../x.py:f", [], {}, [1, 2], {"k": 1}, [[1, 2], [3]], "\u00e9", "\x85", "\u2028"]


def _nodes(doc, path=()):
    """Every (path, node) of a parsed document, root first."""
    out = [(path, doc)]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _nodes(value, path + (key,))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += _nodes(value, path + (index,))
    return out


def _set(doc, path, value):
    """doc with the node at path replaced; unchanged when the path no longer leads anywhere (YAML
    aliases share one node between several paths, so an earlier edit can move what a path meant)."""
    if not path:
        return value
    parent = doc
    try:
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass
    return doc


def _delete(doc, path):
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    return doc


_NEST_MARK = "NEST_MARK_7f3a"


def _unshared(node):
    """The document as a tree: a YAML alias (`args: &devargs` ... `args: *devargs`) loads as one
    shared object, so a swap of two paths through it would change both and break the second."""
    if isinstance(node, dict):
        return {key: _unshared(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_unshared(value) for value in node]
    return node


def structural(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    doc = _unshared(yaml.safe_load(data.decode("utf-8")))
    nodes = _nodes(doc)
    path, node = rng.choice(nodes[1:])
    kind = rng.choice(["delete", "replace", "replace", "insert", "copy", "wrap", "nest", "swap"])
    if kind == "delete":
        doc = _delete(doc, path)
    elif kind == "replace":
        doc = _set(doc, path, rng.choice(INTERESTING))
    elif kind == "insert":
        mappings = [(p, n) for p, n in nodes if isinstance(n, dict)]
        target_path, target = rng.choice(mappings)
        target[rng.choice(WORDS + ["unknown_key", "\u00fcml", "a\x00"])] = rng.choice(INTERESTING + [node])
    elif kind == "copy":
        other_path, _ = rng.choice(nodes[1:])
        import copy
        doc = _set(doc, other_path, copy.deepcopy(node))
    elif kind == "wrap":
        doc = _set(doc, path, rng.choice([[node], {"array": node}, {"values": node}]))
    elif kind == "nest":
        # Deep nests are spliced in as text: the YAML dumper itself recurses per level.
        depth = rng.choice([5, 20, 31, 33, 40, 600])
        doc = _set(doc, path, _NEST_MARK)
        nest = b"[" * depth + rng.choice([b"1", b"1.5", b"x"]) + b"]" * depth
    else:
        other_path, other = rng.choice(nodes[1:])
        if not (other_path[:len(path)] == path or path[:len(other_path)] == other_path):
            doc = _set(doc, path, other)
            doc = _set(doc, other_path, node)
    text = yaml.dump(doc, allow_unicode=False, sort_keys=False, default_flow_style=None, width=10 ** 6)
    data = text.encode("utf-8")
    if kind == "nest":
        data = data.replace(_NEST_MARK.encode(), nest)
    return f"struct-{kind}:{'.'.join(map(str, path))[:60]}", data


def bytewise(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    kind = rng.choice(["flip", "delete", "repeat", "insert", "insert", "number", "number", "word",
                       "truncate", "bomb"])
    at = rng.randrange(len(data) + 1)
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
        return f"bytes-flip@{at}", bytes(out)
    if kind == "delete":
        return f"bytes-delete@{at}", data[:at] + data[at + rng.randint(1, 40):]
    if kind == "repeat":
        span = data[at:at + rng.randint(1, 200)]
        return f"bytes-repeat@{at}", data[:at] + span * rng.randint(2, 5) + data[at:]
    if kind == "insert":
        token = rng.choice(TOKENS)
        return f"bytes-insert@{at}:{token[:12]!r}", data[:at] + token + data[at:]
    if kind == "number":
        spans = [m.span() for m in re.finditer(rb"(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?(?![\w.])", data)]
        if spans:
            start, end = rng.choice(spans)
            number = rng.choice(NUMBERS).encode()
            return f"bytes-number@{start}:{number.decode()}", data[:start] + number + data[end:]
    if kind == "word":
        spans = [m.span() for m in re.finditer(rb"[A-Za-z_][\w.]*", data)]
        start, end = rng.choice(spans)
        word = rng.choice(WORDS).encode()
        return f"bytes-word@{start}:{word[:20].decode()}", data[:start] + word + data[end:]
    if kind == "bomb":
        lines = [b"b0: &b0 [x, x, x, x, x, x, x, x, x]"]
        lines += [f"b{n}: &b{n} [{', '.join([f'*b{n - 1}'] * 9)}]".encode() for n in range(1, 9)]
        return "bytes-bomb", data + b"bomb:\n" + b"".join(b"  " + line + b"\n" for line in lines)
    return f"bytes-truncate@{at}", data[:at]


def mutants(count: int = MUTANTS, seed: int = SEED):
    """(label, bytes) pairs, the same on every run."""
    rng = random.Random(seed)
    originals = [(p.name, p.read_bytes()) for p in CASE_FILES]
    for index in range(count):
        name, data = originals[index % len(originals)]
        mutate = structural if index % 2 else bytewise
        label, mutant = mutate(rng, data)
        if rng.random() < 0.15:                              # sometimes a second mutation on top
            label2, mutant = bytewise(rng, mutant)
            label += "+" + label2
        yield f"{index}:{name}:{label}", mutant


# ----------------------------------------------------------------------------- independent checks

_BAD_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_NUMBA_SCALARS = {"boolean", "intp", "uintp", "int8", "int16", "int32", "int64", "uint8", "uint16",
                  "uint32", "uint64", "float16", "float32", "float64", "complex64", "complex128"}
_RECAST = ("float16", "float32", "float64")


def _walk(value, path="case"):
    """Every leaf of a Case record (dataclasses, dicts, lists and tuples)."""
    if is_dataclass(value):
        for f in fields(value):
            yield from _walk(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield f"{path}.<key>", k
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path, value


def _fits(value, dtype: str) -> bool:
    """numpy's view of whether a scalar value fits a dtype without changing."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return True
    if kind in "iu":
        info = np.iinfo(dtype)
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
            and info.min <= value <= info.max
    if isinstance(value, bool):
        return kind in "fc"
    real = np.finfo(np.dtype(dtype).type(0).real.dtype)
    return math.isfinite(value) and abs(value) <= float(real.max)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def invalid_reasons(case) -> list[str]:
    """Why an accepted case is invalid (empty: valid). Independent of the loader's code."""
    reasons = []
    for path, leaf in _walk(case):
        if isinstance(leaf, str):
            if _BAD_CHARS.search(leaf):
                reasons.append(f"{path}: control character or lone surrogate {leaf[:40]!r}")
            try:
                leaf.encode("utf-8")
            except UnicodeEncodeError:
                reasons.append(f"{path}: not encodable as UTF-8")
        elif isinstance(leaf, float) and not math.isfinite(leaf):
            reasons.append(f"{path}: non-finite {leaf}")
        elif _is_int(leaf) and not -2 ** 63 <= leaf < 2 ** 63:
            reasons.append(f"{path}: integer {leaf} beyond 64 bits")
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", case.id):
        reasons.append(f"id {case.id!r}")
    launch = case.launch
    for name in ("grid", "block", "threads"):
        dims = getattr(launch, name)
        if dims is not None and not all(_is_int(d) and d >= 1 for d in dims):
            reasons.append(f"launch.{name} {dims}")
    if not _is_int(case.seed) or case.seed < 0:
        reasons.append(f"seed {case.seed!r}")
    if case.check.fd is not None:
        fd = case.check.fd
        if not _is_int(fd.directions) or fd.directions < 1:
            reasons.append(f"fd.directions {fd.directions!r}")
        for tol in (fd.rtol, fd.atol):
            if tol is not None and not (math.isfinite(tol) and tol >= 0):
                reasons.append(f"fd tolerance {tol!r}")
    if not _is_int(case.check.repeat) or case.check.repeat < 1:
        reasons.append(f"repeat {case.check.repeat!r}")
    for kernel in [case.kernel, *case.native.values()]:      # (None: the case gives native kernels only)
        if kernel is None:
            continue
        kernel_file = (ROOT / kernel.path).resolve()
        # a kernel is a `def` or a module-level name bound to a factory's result (`k = make(...)`)
        if not kernel_file.is_relative_to(ROOT) or not kernel_file.is_file() \
                or (f"def {kernel.function}(" not in kernel_file.read_text()
                    and not re.search(rf"^{re.escape(kernel.function)}\s*=", kernel_file.read_text(), re.M)):
            reasons.append(f"kernel {kernel}")
    elements = 0
    for arg in case.args:
        reasons += _arg_reasons(case, arg)
        if arg.array is not None and arg.alias is None:
            elements += _elements(arg)
    if elements > MAX_ELEMENTS:
        reasons.append(f"{elements} elements (documented limit {MAX_ELEMENTS})")
    return reasons


def _run_dtypes(case, declared):
    runs = [d for d in case.dtypes if d is not None]
    return runs if runs and declared in _RECAST else [declared]


def _elements(arg) -> int:
    shape = arg.array.shape
    layout = arg.array.layout or {}
    n = math.prod(shape)
    if "strides" in layout:
        storage = 1 + sum((s - 1) * abs(t) for s, t in zip(shape, layout["strides"])) if n else 0
    elif "broadcast" in layout:
        storage = math.prod(layout["broadcast"])
    else:
        storage = n + layout.get("offset", 0)
    copies = {"duplicated": 1, "duplicated_no_need": 1}.get(arg.activity, 0)
    if arg.activity == "batch_duplicated":
        copies = arg.width or 0
    return storage + copies * n


def _arg_reasons(case, arg) -> list[str]:
    reasons = []
    where = f"args.{arg.name}"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", arg.name):
        reasons.append(f"{where}: name")
    if arg.kind == "scalar":
        for dtype in _run_dtypes(case, arg.dtype):
            if not _fits(arg.value, dtype):
                reasons.append(f"{where}: {arg.value!r} does not fit {dtype}")
    if arg.kind == "type":
        name = arg.value
        ok = name in ("bool", "int", "float", "complex")
        if name.startswith("numpy.") and name.count(".") == 1:
            obj = getattr(np, name[6:], None)
            ok = isinstance(obj, type) and issubclass(obj, np.generic) and obj is not np.generic
        match = re.fullmatch(r"numba(?:\.types)?\.(\w+)", name)
        ok = ok or bool(match and match.group(1) in _NUMBA_SCALARS)
        if not ok:
            reasons.append(f"{where}: type {name!r} is not a plain scalar type")
    if arg.array is not None and arg.alias is None:
        spec = arg.array
        if not all(_is_int(d) and d >= 0 for d in spec.shape):
            reasons.append(f"{where}: shape {spec.shape}")
        for init in filter(None, [spec.init, (arg.shadow or {}).get("init")]):
            if isinstance(init, dict) and "values" in init:
                flat = np.asarray(init["values"], dtype=object).ravel().tolist() \
                    if init["values"] else []
                for dtype in _run_dtypes(case, spec.dtype):
                    bad = [v for v in flat if not _fits(v, dtype)]
                    if bad and np.dtype(dtype).kind != "b":
                        reasons.append(f"{where}: values {bad[:3]} do not fit {dtype}")
            if isinstance(init, dict) and ("uniform" in init or "normal" in init):
                pair = init.get("uniform") or init.get("normal")
                if not all(isinstance(p, (int, float)) and math.isfinite(p) for p in pair):
                    reasons.append(f"{where}: init {init}")
        if _elements(arg) <= 100_000 and not reasons:
            from harness.cases.inputs import with_layout    # the arrays can be built as described
            try:
                value = with_layout(spec, np.random.default_rng(0))
                if value.shape != tuple(spec.shape):
                    reasons.append(f"{where}: built shape {value.shape} != {spec.shape}")
            except Exception as exc:                  # noqa: BLE001 - any failure means invalid
                reasons.append(f"{where}: cannot build the array: {type(exc).__name__}: {exc}")
    return reasons


# ----------------------------------------------------------------------------- the run

KEYLESS = ("not UTF-8", "invalid YAML", "the case file is empty", "a case file is a mapping")


def classify(error: CaseError) -> str:
    message = error.bare_message
    for prefix, kind in (("not UTF-8", "encoding"), ("invalid YAML: character", "character"),
                         ("invalid YAML", "yaml syntax"), ("nested deeper", "depth limit"),
                         ("more than", "node limit"), ("alias", "alias"), ("the case's arrays", "element limit"),
                         ("unknown key", "unknown key"), ("missing", "missing key"),
                         ("expected", "wrong type"), ("bad value", "bad value"),
                         ("text contains", "bad text"), ("a key contains", "bad text"),
                         ("key longer", "bad text"), ("text longer", "bad text")):
        if message.startswith(prefix):
            return kind
    if "not a finite number" in message:
        return "non-finite number"
    if "out of range" in message or "too large" in message or "cannot hold" in message \
            or "does not fit" in message or "takes an integer" in message:
        return "out of range"
    if "not an allowed type" in message:
        return "type allow-list"
    return "other semantic"


def run_fuzz(directory: Path, count: int = MUTANTS, seed: int = SEED) -> dict:
    accepted, rejected, leaks, invalid, unplaced = 0, Counter(), [], [], []
    for index, (label, data) in enumerate(mutants(count, seed)):
        path = directory / f"m{index:05d}.yaml"
        path.write_bytes(data)
        try:
            cases = load_case_file(path, ROOT)
        except CaseError as error:
            rejected[classify(error)] += 1
            keyed = error.key or error.bare_message.startswith(KEYLESS)
            if error.file != path.as_posix() or error.line is None or not keyed:
                unplaced.append(f"{label}: {error}")
            continue
        except Exception as exc:                          # noqa: BLE001 - a leak is the finding
            leaks.append(f"{label}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        accepted += 1
        for case in cases:
            reasons = invalid_reasons(case)
            if reasons:
                invalid.append(f"{label} [{case.variant or 'base'}]: {'; '.join(reasons)[:300]}")
        path.unlink()
    return {"files": count, "accepted": accepted, "rejected": dict(rejected.most_common()),
            "leaks": leaks, "invalid_accepted": invalid, "errors_without_place": unplaced}


def test_mutated_case_files_load_or_fail_cleanly(tmp_path):
    result = run_fuzz(tmp_path)
    summary = {k: (len(v) if isinstance(v, list) else v) for k, v in result.items()}
    print(f"\nbad-input fuzz: {summary}")
    assert result["accepted"] + sum(result["rejected"].values()) + len(result["leaks"]) == MUTANTS
    assert result["leaks"] == [], "\n".join(result["leaks"][:20])
    assert result["invalid_accepted"] == [], "\n".join(result["invalid_accepted"][:20])
    assert result["errors_without_place"] == [], "\n".join(result["errors_without_place"][:20])
    # The mutations must exercise both outcomes, or the fuzzer proves little.
    assert result["accepted"] >= MUTANTS // 20 and sum(result["rejected"].values()) >= MUTANTS // 2


if __name__ == "__main__":
    import json
    import tempfile
    n = int(sys.argv[1]) if len(sys.argv) > 1 else MUTANTS
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_fuzz(Path(tmp), n)
    print(json.dumps(outcome, indent=1, ensure_ascii=True))
