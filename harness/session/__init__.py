"""The pytest plugin and `harness run`: one session's backend, options, output and shards."""
