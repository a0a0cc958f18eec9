"""Runs expected to fault run in a process of their own (on a GPU a fault poisons the context)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_isolated_run_reports_the_expected_fault():
    from harness.backends import get_backend
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    backend = get_backend()
    case = load_case_file(ROOT / "cases/kernel-fault.yaml", ROOT)[0]
    run = expand_runs(case, backend.name)[0]
    outcome = Runner(ROOT, backend.name).execute_isolated(run)
    assert outcome.state == "PASS", outcome.message
    assert "KernelFaultError" in outcome.message and "out_of_bounds" in outcome.message
    assert outcome.run_id == "cases/kernel-fault.yaml::primal"


def test_isolated_run_failure_is_an_error_outcome(tmp_path):
    from harness.backends import get_backend
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    backend = get_backend()
    case = load_case_file(ROOT / "cases/kernel-fault.yaml", ROOT)[0]
    run = expand_runs(case, backend.name)[0]
    runner = Runner(tmp_path, backend.name)          # a root without the case: the child cannot load it
    outcome = runner.execute_isolated(run)
    assert outcome.state == "ERROR" and "isolated run failed" in outcome.message


def test_isolated_run_outside_the_checkout_finds_the_harness(tmp_path, monkeypatch):
    """A case root elsewhere (fuzz triage writes its cases to its own folder) with the harness on a
    relative PYTHONPATH, as a checkout runs it: the child still imports this harness and runs."""
    import shutil

    from harness.backends import get_backend
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    backend = get_backend()
    for part in ("cases/kernel-fault.yaml",):
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / part, tmp_path / part)
    doc = (tmp_path / "cases/kernel-fault.yaml").read_text()
    kernel = next(line.split(":", 1)[1].strip().split(":")[0] for line in doc.splitlines() if line.startswith("kernel:"))
    (tmp_path / kernel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / kernel, tmp_path / kernel)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PYTHONPATH", ".")
    case = load_case_file(tmp_path / "cases/kernel-fault.yaml", tmp_path)[0]
    outcome = Runner(tmp_path, backend.name).execute_isolated(expand_runs(case, backend.name)[0])
    assert outcome.state == "PASS", outcome.message
