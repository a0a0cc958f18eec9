"""Derivative rules: partials of every primitive, custom rules, libm stand-ins, the rule doc."""
