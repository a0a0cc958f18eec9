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
