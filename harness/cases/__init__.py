"""The case loader: YAML case files -> validated `Case` records -> `Run`s.

    cases = load_case_file("cases/foo.yaml", root=".")   # base case, then one per variant
    runs = [run for case in cases for run in expand_runs(case, "sim")]
    args = apply_dtype(run.case, run.dtype)               # float arguments at the run's dtype

The format is defined once, in `schema.json`; docs/case-format.md describes it in prose.
"""
from harness.cases.expand import apply_dtype, expand_runs
from harness.cases.loader import case_schema, load_case_file
from harness.core.errors import CaseError

__all__ = ["CaseError", "apply_dtype", "case_schema", "expand_runs", "load_case_file"]
