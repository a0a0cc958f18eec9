"""The results store (one JSON line per run) and the validation of records read back."""
