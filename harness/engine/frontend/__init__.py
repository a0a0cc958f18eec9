"""The engine's front end: a kernel's source parsed, normalised and lowered into SSA."""
