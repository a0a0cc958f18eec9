"""An engine release in its own environment, built on demand and cached.

A release is installed with `pip install --no-deps --target` into
`.cache/harness/releases/<engine>-<version>/` and put first on the child process's PYTHONPATH, so
the child imports that release while everything else (numba, numpy, the harness itself) comes from
the environment the command runs in. `--no-deps` keeps one release from upgrading or downgrading
what the harness needs; an old release that cannot import beside today's numpy is a result (the
run records say so), not a reason to build a second numpy per release.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# The engines with releases on PyPI, by the distribution that ships them.
DISTRIBUTIONS = {"warp": "warp-lang", "taichi": "taichi"}
_COMPLETE = ".harness-release.json"   # written last: a folder without it is a broken install


class ReleaseEnvError(RuntimeError):
    """A release that could not be installed: pip's own words, shortened."""


@dataclass(frozen=True)
class ReleaseEnv:
    engine: str
    version: str
    path: Path

    def pythonpath(self, *rest: str) -> str:
        return ":".join([str(self.path), *[r for r in rest if r]])


def distribution(engine: str) -> str:
    try:
        return DISTRIBUTIONS[engine]
    except KeyError:
        raise ValueError(f"engine {engine!r} has no releases to install: choose from "
                         f"{', '.join(DISTRIBUTIONS)}") from None


def cache_root(project: Path) -> Path:
    return project / ".cache" / "harness" / "releases"


def ensure(engine: str, version: str, project: Path, pip: list[str] | None = None) -> ReleaseEnv:
    """The release's folder, installing it first if no complete install is cached."""
    if not re.fullmatch(r"[0-9][0-9A-Za-z.+-]*", version):
        raise ValueError(f"{version!r} is not a release version")
    path = cache_root(project) / f"{engine}-{version}"
    if (path / _COMPLETE).is_file():
        return ReleaseEnv(engine, version, path)
    if path.exists():
        shutil.rmtree(path)                  # an interrupted install: start again
    dist = distribution(engine)
    cmd = (pip or [sys.executable, "-m", "pip"]) + ["install", "--quiet", "--no-deps", "--no-compile",
                                                    "--disable-pip-version-check", "--target", str(path),
                                                    f"{dist}=={version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(path, ignore_errors=True)
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-4:])
        raise ReleaseEnvError(f"could not install {dist}=={version}: {tail}")
    (path / _COMPLETE).write_text(json.dumps({"engine": engine, "distribution": dist, "version": version}))
    return ReleaseEnv(engine, version, path)


def available(engine: str, pip: list[str] | None = None) -> list[str]:
    """Every release of the engine on the package index, oldest first (`pip index versions`)."""
    dist = distribution(engine)
    cmd = (pip or [sys.executable, "-m", "pip"]) + ["index", "versions", dist, "--disable-pip-version-check"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    match = re.search(r"Available versions:\s*(.+)", proc.stdout)
    if proc.returncode != 0 or not match:
        raise ReleaseEnvError(f"could not list the releases of {dist}: "
                              f"{(proc.stderr or proc.stdout).strip()[-300:]}")
    return sorted((v.strip() for v in match.group(1).split(",")), key=version_key)


def version_key(version: str) -> tuple:
    """Releases in order: 1.10.0 after 1.9.1; a pre-release before its release."""
    parts = []
    for piece in re.split(r"[.+-]", version):
        number = re.match(r"\d+", piece)
        parts.append((int(number.group()), piece[number.end():] or "~") if number else (-1, piece))
    return tuple(parts)


def last_of_each_minor(versions: list[str], first: str | None = None, last: str | None = None) -> list[str]:
    """The newest patch release of every minor release between `first` and `last` (as 'X.Y'),
    pre-releases left out: 1.0.2, 1.1.0, 1.2.2, ..."""
    newest: dict[tuple, str] = {}
    for v in versions:
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", v):
            continue
        minor = tuple(int(x) for x in v.split(".")[:2])
        if first and minor < tuple(int(x) for x in first.split(".")[:2]):
            continue
        if last and minor > tuple(int(x) for x in last.split(".")[:2]):
            continue
        if minor not in newest or version_key(v) > version_key(newest[minor]):
            newest[minor] = v
    return [newest[m] for m in sorted(newest)]
