"""What the loader worked out about a case file, kept on disk for the next process that loads it.

Every pytest-xdist worker collects every case file: parsing YAML in pure Python (twice: the
bounded event walk, then the document) and validating against the schema took about 80% of a
worker's collection. A parsed document (after the event walk's limits passed) is kept by the
text's digest, and a document that the schema accepted is remembered by the digest of its
contents; both keys include the digest of the loader's own code and schema (every file of
harness/cases/) and PyYAML's version, so a change to either starts afresh. Only successes are
kept: a malformed file is parsed and validated again, so its error is the loader's, as before.
Lives under the harness cache folder (harness/core/paths.py: beside the generated sources, default .cache/harness/cases).
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from pathlib import Path


@functools.cache      # process-wide: the digest of the installed loader's code, fixed for the process
def _loader_digest() -> str:
    import yaml
    digest = hashlib.sha256(yaml.__version__.encode())
    here = Path(__file__).resolve().parent
    for path in sorted(here.iterdir()):
        if path.suffix in (".py", ".json"):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _folder() -> Path | None:
    from harness.core.paths import case_load_cache_dir
    try:
        return case_load_cache_dir()
    except OSError:
        return None


def _key(kind: str, data: bytes) -> str:
    return hashlib.sha256(f"{kind}:{_loader_digest()}:".encode() + data).hexdigest()[:32]


def _write(path: Path, data: bytes) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)                 # atomic: concurrent writers write the same bytes
    except OSError:
        pass                                  # a cache that cannot be written is only slower


def parsed(text: str, parse, expected_type: type):
    """parse(text), or the document an earlier process parsed from the same text."""
    folder = _folder()
    if folder is None:
        return parse(text)
    path = folder / f"doc-{_key('doc', text.encode('utf-8', 'surrogatepass'))}.pickle"
    try:
        document = pickle.loads(path.read_bytes())
        if isinstance(document, expected_type):
            return document
    except Exception:                         # noqa: BLE001 - missing, partial or foreign: parse again
        pass
    document = parse(text)
    if isinstance(document, expected_type):
        _write(path, pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL))
    return document


def _valid_marker(document) -> Path | None:
    folder = _folder()
    if folder is None:
        return None
    return folder / f"valid-{_key('valid', repr(document).encode('utf-8', 'surrogatepass'))}"


def known_valid(document) -> bool:
    marker = _valid_marker(document)
    return marker is not None and marker.exists()


def remember_valid(document) -> None:
    marker = _valid_marker(document)
    if marker is not None and not marker.exists():
        _write(marker, b"")
