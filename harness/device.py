"""Old import path of device-side autodiff, kept because kernels the fuzzer wrote before the layout
change (its findings and reproducers on disk) import it; new code imports `from harness import ...`.
Drop after 2027-03-01."""
from harness.engine.device import Active, Const, Duplicated, DuplicatedNoNeed, Forward, Reverse, autodiff  # noqa: F401
