"""The plain reproducers of Warp and Taichi bugs (reproducers/): each runs without the harness, as a
bug report's reader would run it, and says how to run it and what its exit status means."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPRODUCERS = sorted((ROOT / "reproducers").glob("*.py"))


def _imported_modules(source: str) -> set:
    tree = ast.parse(source)
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def test_reproducers_import_no_harness():
    assert REPRODUCERS
    for path in REPRODUCERS:
        text = path.read_text()
        # the script itself and any child program it writes out as a string (Taichi reads kernels from files)
        programs = [text] + [n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)
                             and isinstance(n.value, str) and "import " in n.value and "\n" in n.value]
        for program in programs:
            try:
                modules = _imported_modules(program)
            except SyntaxError:                      # a docstring that mentions an import
                continue
            assert "harness" not in modules, path.name


def test_reproducers_say_how_to_run_them_and_what_the_exit_status_means():
    for path in REPRODUCERS:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert re.search(r"Run: python3? \S+", doc) and re.search(r"exit (status )?1\b", doc), path.name


def test_a_generated_reproducer_launches_the_cases_own_kernel_by_name():
    """harness/fuzz/reproducer.py wrote `.kernel`, the fuzzer's one name: a reproducer made from a
    hand-written case (reproducers/warp_square_in_place.py) failed with AttributeError."""
    from harness.fuzz.reproducer import script
    case = {"kernel": "kernels/war.py:square_in_place_first",
            "args": {"A": {"array": {"shape": [1], "dtype": "float64", "init": {"values": [3.0]}},
                           "activity": "duplicated"}}}
    for engine in ("warp", "taichi"):
        text = script(engine, "# translation\n", case, "float64", 1, "title")
        ast.parse(text)
        assert f'getattr(load_kernel_module("{engine}"), \'square_in_place_first\')' in text
        assert '").kernel\n' not in text
