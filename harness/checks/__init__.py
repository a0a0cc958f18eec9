"""Checks that launch variants of a run: activity relations, nondeterminism, the primal reference, stated values."""
