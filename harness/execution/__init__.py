"""Executing one run: the runner, its strategies, the one judgement of its state, isolation."""
