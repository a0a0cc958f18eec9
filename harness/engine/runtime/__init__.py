"""The launch: argument classification, compile jobs, the generated-source cache, Engine.launch."""
