"""The small core the engine and the rest of the harness share: plain records, errors, activity
annotations and the backend interface. It imports nothing from the rest of the harness (and
nothing heavy), so the case loader and the report can use it without loading the engine."""
