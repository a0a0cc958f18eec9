"""A session object owns the runner, its engines and caches (harness/session.py); the plugin keeps
it in config.stash, and two sessions in one process do not share engines or launchers."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(run_id: str, backend_name: str):
    from harness.cases import expand_runs, load_case_file
    path, _, _ = run_id.partition("::")
    for case in load_case_file(ROOT / path, ROOT):
        for run in expand_runs(case, backend_name):
            if run.run_id == run_id:
                return run
    raise LookupError(run_id)


def test_two_sessions_in_one_process(launching_backend):
    from harness.session import Session
    run = _run("cases/axpy.yaml::reverse-float64", launching_backend.name)
    one, two = Session(ROOT, launching_backend.name), Session(ROOT, launching_backend.name)
    first, second = one.execute(run), two.execute(run)
    assert first.state == second.state == "PASS"
    assert one.runner._engines and two.runner._engines
    assert not set(map(id, one.runner._engines.values())) & set(map(id, two.runner._engines.values()))
    assert one.backend is two.backend           # the backend is process-wide (numba's choice)


def test_broadcast_launchers_belong_to_their_engine(backend):
    from harness.engine.launch import Engine
    from harness.frontends.broadcast import launcher_for
    a, b = Engine(backend), Engine(backend)
    assert launcher_for(a, "broadcast", ["x"]) is launcher_for(a, "broadcast", ["x"])
    assert launcher_for(a, "broadcast", ["x"]) is not launcher_for(b, "broadcast", ["x"])


def test_plugin_keeps_no_session_state_in_module_globals():
    tree = ast.parse((ROOT / "harness" / "plugin.py").read_text())
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert "_runner" not in assigned
