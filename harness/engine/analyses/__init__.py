"""Analyses over the SSA form: activity, index ownership, memory, barriers, gathers."""
