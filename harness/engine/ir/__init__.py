"""The engine's intermediate form: SSA statements, their types, and the verifier."""
