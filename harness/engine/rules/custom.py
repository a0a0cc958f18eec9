"""Custom derivative rules for device functions.

    def softplus(x):
        return math.log1p(math.exp(x))

    @partials_of(softplus)
    def softplus_partials(x, r):          # operands, then the result
        return 1.0 / (1.0 + math.exp(-x))  # d softplus / dx (a tuple for several operands)

A call to a function with a registered rule is not differentiated through its body: the engine
evaluates the body for the value and the rule for the partial derivatives, and both modes use
them (forward: dr = sum_k p_k dx_k; reverse: dx_k += dr p_k), exactly like a built-in rule.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.engine.frontend.source import python_function


@dataclass(frozen=True)
class CustomRule:
    function: object
    partials: object


# process-wide: custom rules are declared by decorating functions at import, once per process, as
# numba registers its own overloads; a session never adds to it
_RULES: dict[int, CustomRule] = {}


def partials_of(function):
    """Register the decorated function as the partial derivatives of `function`."""
    target = python_function(function)

    def register(partials):
        _RULES[id(target)] = CustomRule(target, python_function(partials))
        return partials
    return register


def rule_for(function) -> CustomRule | None:
    try:
        return _RULES.get(id(python_function(function)))
    except TypeError:
        return None
