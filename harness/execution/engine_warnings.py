"""Warnings that an adapter's AD system (Warp, Taichi) raises during a run, kept in the run's record.

Warp and Taichi warn in every process that uses them (a deprecated call of their own, ...). Left to
pytest, the same lines end every session, where they say nothing about any run and push the
compatibility table off the screen. They belong to the run that raised them: its record keeps them
(`Outcome.engine_warnings`, shown in the report). Any other warning, the harness's or numba's, is
passed on unchanged.
"""
from __future__ import annotations

import importlib.util
import warnings
from contextlib import contextmanager
from pathlib import Path

BUNDLED = "bundled"


def package_dirs(engine: str) -> list[Path]:
    """The folders of the engine's Python package (Warp: warp, Taichi: taichi); none when the
    engine is not a package of that name (an adapter of another repository)."""
    try:
        spec = importlib.util.find_spec(engine)
    except (ImportError, ValueError):
        return []
    return [Path(p).resolve() for p in (spec.submodule_search_locations or [])] if spec else []


def _inside(filename: str, folders: list[Path]) -> bool:
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    return any(path.is_relative_to(folder) for folder in folders)


def describe(warning: warnings.WarningMessage, folders: list[Path]) -> str:
    """One line: the category, the message and where in the engine's package it was raised."""
    where = Path(warning.filename)
    for folder in folders:
        if _inside(warning.filename, [folder]):
            where = Path(folder.name) / Path(warning.filename).resolve().relative_to(folder)
    return f"{warning.category.__name__}: {warning.message} ({where}:{warning.lineno})"


@contextmanager
def kept_in(engine: str, record: list):
    """Run the block; append to `record` each distinct warning the engine's package raised in it, and
    re-issue every other warning as it was."""
    if engine == BUNDLED:
        yield
        return
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:                               # a run that raised (a refusal, say) keeps its warnings too
        _sort(caught, package_dirs(engine), record)


def _sort(caught: list, folders: list[Path], record: list) -> None:
    for warning in caught:
        if folders and _inside(warning.filename, folders):
            line = describe(warning, folders)
            if line not in record:
                record.append(line)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno,
                                   source=warning.source)
