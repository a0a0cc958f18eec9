"""Module map of harness/: lines per module and the largest functions (a layout change's before/after).

    python benchmarks/module_map.py [root] [--top N]
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path


def functions(tree: ast.AST, prefix: str = ""):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{node.name}", node.end_lineno - node.lineno + 1
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")


def main(argv: list[str]) -> int:
    top = 15
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        del argv[i:i + 2]
    root = Path(argv[0] if argv else "harness")
    modules, funcs = [], []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(root.parent)
        modules.append((len(text.splitlines()), str(rel)))
        for name, size in functions(ast.parse(text)):
            funcs.append((size, f"{rel}:{name}"))
    packages: dict[str, int] = {}
    for lines, rel in modules:
        parts = Path(rel).parts
        key = "/".join(parts[:2]) if len(parts) > 2 else parts[0]
        packages[key] = packages.get(key, 0) + lines
    print(f"# {len(modules)} modules, {sum(n for n, _ in modules)} lines")
    print("## lines per package")
    for key, lines in sorted(packages.items()):
        print(f"{lines:6d}  {key}")
    print("## lines per module")
    for lines, rel in sorted(modules, reverse=True):
        print(f"{lines:6d}  {rel}")
    print(f"## largest {top} functions (lines)")
    for size, name in sorted(funcs, reverse=True)[:top]:
        print(f"{size:6d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
