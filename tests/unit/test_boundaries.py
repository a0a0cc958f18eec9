"""Boundaries between the parts of the data path, read off the source's imports (no module is
imported to check them): the oracles import nothing that launches, the problems do not import the
runner, and no module imports another module's private (`_name`) names. The engine's own boundary
(it imports only itself and harness/core) is tests/engine/test_engine_library.py."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "harness"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import in the file, resolved to
    absolute module names; function-level (deferred) imports included."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((target, [a.name for a in node.names], node.lineno))
    return found


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def harness_closure(start: str) -> set[str]:
    """Every harness module `start` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in MODULES:
            continue
        seen.add(name)
        for target, names, _ in imports_of(MODULES[name]):
            todo.append(target)
            todo += [f"{target}.{n}" for n in names]        # `from harness import runner`
    return seen


LAUNCHING = ("harness.engine", "harness.backends", "harness.execution.runner", "harness.execution.strategies",
             "harness.adapters")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("harness.oracles")))
def test_oracles_import_nothing_that_launches(module):
    reached = harness_closure(module)
    bad = sorted(m for m in reached if m.startswith(LAUNCHING))
    assert not bad, f"{module} reaches {bad}"
    # numpy and cupy are array math (cupy for states that live on the GPU), not launches
    third_party = {t.split(".")[0] for t, _, _ in imports_of(MODULES[module])}
    assert not third_party & {"numba", "warp", "taichi", "yaml", "pytest"}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("harness.problems")))
def test_problems_do_not_import_the_runner(module):
    reached = harness_closure(module)
    assert not {m for m in reached if m.startswith(("harness.execution", "harness.session", "harness.checks"))}, \
        f"{module} reaches the runner, the session or the checks"


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for name, path in sorted(MODULES.items()):
        for target, names, line in imports_of(path):
            if not target.startswith("harness") or target == name:
                continue
            offenders += [f"{path.relative_to(ROOT)}:{line}: {target}.{n}" for n in names
                          if n.startswith("_") and not n.startswith("__")]
    assert not offenders, "private names imported across modules:\n" + "\n".join(offenders)


def test_the_checks_see_imports():
    """The boundary tests rest on imports_of: it must resolve relative imports to the real modules."""
    found = imports_of(PACKAGE / "engine" / "runtime" / "launch.py")
    assert any(t == "harness.engine.pipeline" and "run_passes" in n for t, n, _ in found)
    assert "harness.engine.pipeline" in harness_closure("harness.engine.runtime.launch")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("harness.checks")))
def test_checks_do_not_import_the_run_or_the_session(module):
    """The checks launch variants through a problem; the strategy that calls them is above them."""
    reached = harness_closure(module)
    bad = sorted(m for m in reached if m.startswith(("harness.execution", "harness.session")))
    assert not bad, f"{module} reaches {bad}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(("harness.results", "harness.report"))))
def test_results_and_report_import_nothing_that_launches(module):
    """A report is built from results records alone, on a machine without numba or a GPU."""
    reached = harness_closure(module)
    bad = sorted(m for m in reached if m.startswith(LAUNCHING + ("harness.problems", "harness.checks")))
    assert not bad, f"{module} reaches {bad}"


SELFTEST_USERS = ("harness.cli", "harness.session", "harness.tools", "harness.selftest")


def test_only_the_session_and_the_tools_plant_mutants():
    """Mutants reach an engine only as seams handed to a Runner: nothing on the data path imports them."""
    offenders = sorted(f"{name} imports {target}" for name, path in MODULES.items()
                       for target, _, _ in imports_of(path)
                       if target.startswith("harness.selftest") and not name.startswith(SELFTEST_USERS))
    assert not offenders


def test_internal_code_imports_the_implementation_not_the_facade():
    """harness/__init__.py is for kernels and user scripts; inside the package it would hide the
    real dependency (and the facade's names are loaded lazily)."""
    import harness
    offenders = sorted(f"{path.relative_to(ROOT)}:{line}: from harness import {n}"
                       for name, path in MODULES.items() if name != "harness"
                       for target, names, line in imports_of(path) if target == "harness"
                       for n in names if n in harness.__all__)
    assert not offenders


ROOT_MODULES = {"__init__.py", "model.py", "policy.py", "cli.py",
                "device.py"}          # device.py: an old import path kept for kernels the fuzzer wrote


def test_the_package_root_keeps_only_the_vocabulary_the_console_script_and_the_facade():
    assert {p.name for p in PACKAGE.glob("*.py")} == ROOT_MODULES


def test_the_facade_exports_what_kernels_import():
    import harness
    from harness.engine import device
    for name in ("autodiff", "Forward", "Reverse", "Duplicated", "partials_of", "launch"):
        assert name in harness.__all__
    assert harness.autodiff is device.autodiff
    with pytest.raises(AttributeError):
        harness.not_a_public_name


def test_the_module_map_prints_the_layout_and_its_cycles():
    """docs/architecture.md names `python -m harness.tools.module_map`: it must describe this tree."""
    from harness.tools.module_map import cycles, import_graph, report
    text = report()
    assert "at the root:" in text and "import cycles:" in text and "engine/" in text
    assert cycles({"a": {"b"}, "b": {"a", "c"}, "c": set()}) == [["a", "b"]]
    graph = import_graph(PACKAGE)
    assert "harness.engine.pipeline" in graph["harness.engine.runtime.launch"]
    assert "harness.engine" not in graph["harness.engine.runtime.launch"]      # the package's own __init__
