"""A session's Runner owns its backend, engines and caches (harness/execution/runner.py); the plugin keeps
it in config.stash, and two sessions in one process do not share engines or launchers."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(run_id: str, backend_name: str):
    from harness.cases import expand_runs, load_case_file
    path, _, _ = run_id.partition("::")
    for case in load_case_file(ROOT / path, ROOT):
        for run in expand_runs(case, backend_name):
            if run.run_id == run_id:
                return run
    raise LookupError(run_id)


def test_two_sessions_in_one_process(launching_backend):
    from harness.execution.runner import Runner
    run = _run("cases/axpy.yaml::reverse-float64", launching_backend.name)
    one, two = Runner(ROOT, launching_backend.name), Runner(ROOT, launching_backend.name)
    first, second = one.execute(run), two.execute(run)
    assert first.state == second.state == "PASS"
    assert one._engines and two._engines
    assert not set(map(id, one._engines.values())) & set(map(id, two._engines.values()))
    assert one.backend is two.backend           # the backend is process-wide (numba's choice)


def test_broadcast_launchers_belong_to_their_engine(backend):
    from harness.engine.runtime.launch import Engine
    from harness.broadcast.frontend import launcher_for
    a, b = Engine(backend), Engine(backend)
    assert launcher_for(a, "broadcast", ["x"]) is launcher_for(a, "broadcast", ["x"])
    assert launcher_for(a, "broadcast", ["x"]) is not launcher_for(b, "broadcast", ["x"])


def test_sessions_with_different_engine_seams_share_no_cache(launching_backend):
    """Two sessions, one with a planted bug in its engine (a different seams table), in one process:
    each keeps its own engines, plans and broadcast launchers, so the bug shows in its session only,
    before and after the other session has compiled the same kernels."""
    from harness.selftest.mutants import get_mutant
    from harness.execution.runner import Runner
    name = launching_backend.name
    kernel_run = _run("cases/math-heavy.yaml::reverse-float64", name)
    broadcast_run = _run("cases/broadcast-primal-numpy.yaml::" + _first_run_name("cases/broadcast-primal-numpy.yaml",
                                                                                 name), name)
    clean, planted = Runner(ROOT, name), Runner(ROOT, name, seams=get_mutant("flip-sin-rule").seams())
    assert clean.execute(kernel_run).state == "PASS"
    assert planted.execute(kernel_run).state == "FAIL"          # not the clean session's compiled plan
    assert clean.execute(kernel_run).state == "PASS"            # nor the other way round
    for session in (clean, planted):
        assert session.execute(broadcast_run).state == "PASS"
    engines = [set(map(id, s._engines.values())) for s in (clean, planted)]
    assert engines[0] and engines[1] and not engines[0] & engines[1]
    from harness.broadcast.frontend import launcher_for
    launchers = [{id(launcher_for(e, "broadcast", ["out"])) for e in s._engines.values()} for s in (clean, planted)]
    assert not launchers[0] & launchers[1]


def _first_run_name(path: str, backend_name: str) -> str:
    from harness.cases import expand_runs, load_case_file
    return expand_runs(load_case_file(ROOT / path, ROOT)[0], backend_name)[0].name


def test_plugin_keeps_no_session_state_in_module_globals():
    tree = ast.parse((ROOT / "harness" / "session" / "plugin.py").read_text())
    assigned = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    constants = {name for name in assigned if name.isupper() or name.startswith("_") and name[1:].isupper()}
    assert assigned <= constants, f"module-level state in harness/session/plugin.py: {sorted(assigned - constants)}"
    source = (ROOT / "harness" / "session" / "plugin.py").read_text()
    assert "global " not in source and "os.environ[" not in source and "environ.setdefault" not in source


def test_no_id_keyed_state_in_the_harness_front_ends():
    """id() as a cache or registry key outlives the object it names (ids are reused)."""
    for rel in ("harness/broadcast/kernelgen.py", "harness/broadcast/frontend.py", "harness/problems/layouts.py",
                "harness/session/plugin.py", "harness/problems/kernel.py", "harness/problems/launch_log.py"):
        tree = ast.parse((ROOT / rel).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) or isinstance(node, ast.Dict) or isinstance(node, ast.Tuple):
                inner = [node.slice] if isinstance(node, ast.Subscript) else list(getattr(node, "keys", None) or
                                                                                  getattr(node, "elts", []))
                for part in inner:
                    for sub in ast.walk(part) if part is not None else ():
                        assert not (isinstance(sub, ast.Call) and getattr(sub.func, "id", None) == "id"), \
                            f"{rel}:{node.lineno}: id() used as a key"
