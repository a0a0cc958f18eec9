"""Turn a loaded Case into Runs, and recast its arguments to a run's dtype.

A case declares its modes and dtypes; every combination is one Run (the variant is already
applied to the Case, and the backend comes from the session). Kept apart from the loader because
it is pure data shuffling that the runner, the pytest plugin and the CLI all share.
"""
from __future__ import annotations

from dataclasses import replace

from harness.adapters.expectations import case_for
from harness.model import FLOAT_DTYPES, ArgSpec, Case, Run

# Declared float dtypes that a run's dtype replaces. float16 is included so a half-precision
# argument follows the run's dtype like any other float; complex, integer and bool arguments keep
# their declared dtype (recasting them would change what the kernel computes, not its precision).
RECAST_DTYPES = ("float16", "float32", "float64")


def expand_runs(case: Case, backend: str, engines: tuple[str, ...] = ("bundled",)) -> list[Run]:
    """One Run per engine x mode x dtype, ordered by engine, then the case's modes, then its dtypes,
    each with the expectation it is judged against (for_run)."""
    runs = []
    for engine in engines:
        for mode in case.modes:
            run_case, skip = for_run(case, engine, mode)
            runs.extend(Run(case=run_case, mode=mode, dtype=dtype, backend=backend, engine=engine, skip=skip)
                        for dtype in case.dtypes)
    return runs


def for_run(case: Case, engine: str, mode: str) -> tuple[Case, str | None]:
    """The one place a loaded case's expectation is rewritten: the case as a run of `engine` in
    `mode` sees it (a per-mode `expect`, then what the engine is held to), and why that engine
    does not run it (or None)."""
    return case_for(for_mode(case, mode), engine, mode)


def for_mode(case: Case, mode: str) -> Case:
    """The case as one mode's run sees it: with a per-mode `expect`, that mode's expectation."""
    if case.expect_by_mode and mode in case.expect_by_mode:
        return replace(case, expect=case.expect_by_mode[mode])
    return case


def apply_dtype(case: Case, dtype: str | None) -> tuple[ArgSpec, ...]:
    """The case's arguments with every float array and float scalar recast to `dtype`.

    None (the default `dtypes`) means "as declared" and returns the arguments unchanged."""
    if dtype is None:
        return case.args
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"a run dtype is one of {', '.join(FLOAT_DTYPES)} or None, not {dtype!r}")
    return tuple(_recast(arg, dtype) for arg in case.args)


def _recast(arg: ArgSpec, dtype: str) -> ArgSpec:
    if arg.kind == "array" and arg.array is not None and arg.array.dtype in RECAST_DTYPES:
        return replace(arg, array=replace(arg.array, dtype=dtype))
    if arg.kind == "scalar" and arg.dtype in RECAST_DTYPES:
        return replace(arg, dtype=dtype)
    return arg
