"""The mutation self-test: planted AD bugs (mutants) and the campaign that runs the suite under each."""
