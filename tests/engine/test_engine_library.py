"""The engine is a library: harness/engine imports nothing from the rest of the harness but the
small shared core (harness/core), and the core imports nothing from the harness at all."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path):
    """Every module a file imports, function-level imports included, made absolute."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            names = [module] if node.module else [f"{module}.{a.name}" for a in node.names]
            for name in names:
                yield node.lineno, name


def _violations(folder: str, allowed: tuple[str, ...]) -> list[str]:
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for line, module in _imports(path):
            if (module == "harness" or module.startswith("harness.")) and \
                    not any(module == a or module.startswith(a + ".") for a in allowed):
                out.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return out


def test_engine_imports_only_itself_and_the_core():
    assert _violations("harness/engine", ("harness.engine", "harness.core")) == []


def test_core_imports_nothing_from_the_harness():
    assert _violations("harness/core", ("harness.core",)) == []


def test_the_import_checker_sees_relative_and_nested_imports(tmp_path):
    lines = dict((m, n) for n, m in _imports(ROOT / "harness" / "execution" / "runner.py"))
    assert "harness.execution.strategies" in lines and "harness.engine.runtime.launch" in lines
    assert "harness.broadcast.frontend" in lines           # imported inside a method


def test_importing_the_engine_loads_no_other_harness_module():
    code = ("import sys, harness.engine; "
            "print(sorted(m for m in sys.modules if m.startswith('harness')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    loaded = eval(done.stdout)
    assert [m for m in loaded if m != "harness" and not m.startswith(("harness.engine", "harness.core"))] == []
