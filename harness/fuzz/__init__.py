"""The kernel fuzzer (`harness fuzz`): random kernels from the engine's grammar, each run in forward
and reverse mode on the simulator through the harness's own runner and oracles; a wrong gradient
or a crash is saved as a case file plus kernel file that reproduce it. See docs/fuzz.md."""
