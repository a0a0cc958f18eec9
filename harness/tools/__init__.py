"""Command-line tools for writing reproducers: `harness new`, `harness show`, `harness reduce`."""
