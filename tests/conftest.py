"""Fixtures of the engine tests (test_rules, test_transform, test_broken_rule, test_engine_launch).

The root conftest registers the harness plugin, which chooses the backend (and sets
NUMBA_ENABLE_CUDASIM for the simulator) in pytest_configure, before any test module is imported.
Everything that imports numba (the backend, tests/kernels_for_tests.py) is still only loaded here,
inside fixtures, so a test module never imports numba at collection time.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
KERNELS_FILE = TESTS / "kernels_for_tests.py"


@pytest.fixture(scope="session")
def backend(pytestconfig):
    from harness.backends import get_backend
    from harness.session.plugin import backend_name
    return get_backend(backend_name(pytestconfig))


@pytest.fixture(scope="session")
def launching_backend(backend):
    if not backend.can_launch:
        pytest.skip(f"the '{backend.name}' backend compiles only; these tests launch kernels")
    return backend


@pytest.fixture(scope="session")
def kernels(backend):
    """tests/kernels_for_tests.py, imported once (after the backend has configured numba)."""
    name = "harness_test_kernels"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, KERNELS_FILE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def engine(backend):
    """A fresh engine (its plan cache is per instance)."""
    from harness.engine.runtime.launch import Engine
    return Engine(backend)


def marker_line(marker: str) -> int:
    """The line of tests/kernels_for_tests.py that carries `# MARK: <marker>`."""
    pattern = re.compile(rf"#\s*MARK:\s*{re.escape(marker)}(\s|$)")
    hits = [n for n, text in enumerate(KERNELS_FILE.read_text().splitlines(), start=1) if pattern.search(text)]
    assert len(hits) == 1, f"marker {marker!r} found on lines {hits} of {KERNELS_FILE}"
    return hits[0]


@pytest.fixture
def mark_line():
    return marker_line


@pytest.fixture
def host_args():
    """Build runner-style HostArgs: host_args(("out", array, "duplicated"), ("a", np.float64(2), "active"))."""
    from harness.cases.inputs import HostArg
    from harness.model import ArgSpec, ArraySpec

    def build(*specs):
        out = []
        for name, value, activity in specs:
            if isinstance(value, np.ndarray):
                spec = ArgSpec(name, "array", activity, array=ArraySpec(tuple(value.shape), str(value.dtype)))
            else:
                value = value if isinstance(value, np.generic) else np.float64(value)
                spec = ArgSpec(name, "scalar", activity, value=value.item(), dtype=str(value.dtype))
            out.append(HostArg(spec, value))
        return out
    return build
