"""The oracles' DiffProblem adapters of a launch: a kernel, a nested call, a program, the launch log."""
