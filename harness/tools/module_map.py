"""The package's layout as a reader meets it: `python -m harness.tools.module_map`.

Prints, from the source alone (nothing is imported): the modules at the package root, each package
with its modules and lines, the largest modules and functions, and the import cycles between
modules (strongly connected components of the import graph, deferred imports included). The
closing notes of layout changes quote it before and after; docs/architecture.md names it.
"""
from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (relative imports resolved)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets.add(module)
                targets |= {f"{module}.{a.name}" for a in node.names}
        # `from . import x` names the package too, but a package's own __init__ is not a dependency
        # of its modules in any sense a reader cares about: edges to an enclosing package are left out
        graph[name] = {t for t in targets if t in files and t != name and not name.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import graph's strongly connected components of more than one module (Tarjan's)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=lambda c: (-len(c), c))


def functions(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def report(root: Path = PACKAGE, top: int = 10) -> str:
    files = sorted(root.rglob("*.py"))
    lines_of = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    total = sum(lines_of.values())
    out = [f"{root.name}/: {len(files)} modules, {total} lines"]
    at_root = [p for p in files if p.parent == root]
    out.append(f"\nat the root: {len(at_root)} modules, {sum(lines_of[p] for p in at_root)} lines "
               f"({100 * sum(lines_of[p] for p in at_root) / max(total, 1):.0f} %)")
    out += [f"  {p.name:<28} {lines_of[p]:>5}" for p in at_root]
    packages = defaultdict(list)
    for p in files:
        if p.parent != root:
            packages[p.parent.relative_to(root).parts[0]].append(p)
    out.append(f"\npackages: {len(packages)}")
    for name, members in sorted(packages.items()):
        out.append(f"  {name + '/':<28} {len(members):>3} modules {sum(lines_of[p] for p in members):>6} lines")
        # a package with stages of its own (the engine) shows them one level down
        stages = defaultdict(list)
        for p in members:
            inner = p.parent.relative_to(root / name).parts
            stages[inner[0] + "/" if inner else "(its root)"].append(p)
        if len(stages) > 1:
            for stage, inside in sorted(stages.items()):
                out.append(f"    {stage:<26} {len(inside):>3} modules {sum(lines_of[p] for p in inside):>6} lines")
    out.append(f"\nlargest modules:")
    for p in sorted(files, key=lambda p: -lines_of[p])[:top]:
        out.append(f"  {str(p.relative_to(root.parent)):<40} {lines_of[p]:>5}")
    fns = [(n, ln, size, p) for p in files for n, ln, size in functions(p)]
    sizes = sorted(size for _, _, size, _ in fns)
    out.append(f"\nfunctions: {len(fns)}, median {sizes[len(sizes) // 2] if sizes else 0} lines; largest:")
    for name, line, size, p in sorted(fns, key=lambda f: -f[2])[:top]:
        out.append(f"  {str(p.relative_to(root.parent)) + ':' + str(line) + ' ' + name:<60} {size:>4}")
    found = cycles(import_graph(root))
    out.append(f"\nimport cycles: {len(found)}")
    for component in found:
        out.append(f"  {len(component)} modules: {', '.join(m.removeprefix(root.name + '.') for m in component)}")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.tools.module_map", description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=10, help="how many of the largest modules and functions")
    args = parser.parse_args(argv)
    print(report(top=args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
