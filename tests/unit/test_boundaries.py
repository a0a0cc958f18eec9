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


PROBLEMS = ("harness.problems.kernel", "harness.problems.nested", "harness.problems.program", "harness.problems.launch_log")


@pytest.mark.parametrize("module", [m for m in PROBLEMS if m in MODULES])
def test_problems_do_not_import_the_runner(module):
    reached = harness_closure(module)
    assert not {m for m in reached if m.startswith(("harness.execution.runner", "harness.session.plugin", "harness.session"))}, \
        f"{module} reaches the runner or the session"


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
    found = imports_of(PACKAGE / "engine" / "launch.py")
    assert any(t == "harness.engine.pipeline" and "run_passes" in n for t, n, _ in found)
    assert "harness.engine.pipeline" in harness_closure("harness.engine.runtime.launch")


def test_the_module_map_prints_the_layout_and_its_cycles():
    """docs/architecture.md names `python -m harness.tools.module_map`: it must describe this tree."""
    from harness.tools.module_map import cycles, import_graph, report
    text = report()
    assert "at the root:" in text and "import cycles:" in text and "engine/" in text
    assert cycles({"a": {"b"}, "b": {"a", "c"}, "c": set()}) == [["a", "b"]]
    graph = import_graph(PACKAGE)
    assert "harness.engine.pipeline" in graph["harness.engine.runtime.launch"]
    assert "harness.engine" not in graph["harness.engine.runtime.launch"]      # the package's own __init__
