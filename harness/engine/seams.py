"""The engine's replaceable parts, passed to an Engine as one constructor argument.

    Engine(backend, options, seams=default_seams().replace(emitters={"barrier": no_barrier}))

- `rules`: the derivative rules, function name -> partials (rules.PARTIALS);
- `emitters`: the reverse sweep's adjoint emitter per statement kind, and its shared steps
  (emit_adjoints.ADJOINT_EMITTERS; emit_adjoints.statement_kind says which statement gets which);
- `owned_arrays`, `mark_taped_loads`: the analyses that decide atomics and taping (ownership.py, analysis.py);
- `interval_exclusive`: the analysis that lets a shared shadow take plain adds between barriers
  (ordering.interval_exclusive);
- `apart_in_thread`: the analysis that lets a store's zeroing of a plainly updated shadow element
  be folded into a later add past other accesses of the array (ordering.apart_in_thread);
- `launch_fingerprint`: what Engine.launch's per-call-site cache compares (launch_cache.fingerprint);
- `check_arguments`: the refusal of aliased or self-overlapping arrays at a launch and at each
  device-side autodiff call (memory.check_arguments);
- `option_defaults`: engine option values that replace EngineOptions' defaults (a case's own
  `engine:` options still win).

Everything else about the engine is fixed. The mutation self-test (harness/selftest/mutants.py) plants
every bug by replacing an entry here, so a refactor that moves code cannot silently disarm it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Seams:
    rules: Mapping[str, tuple[str, ...]]
    emitters: Mapping[str, Callable]
    owned_arrays: Callable
    mark_taped_loads: Callable
    interval_exclusive: Callable
    apart_in_thread: Callable
    launch_fingerprint: Callable
    check_arguments: Callable
    option_defaults: Mapping[str, Any] = field(default_factory=dict)

    def replace(self, *, rules: Mapping | None = None, emitters: Mapping | None = None,
                **fields) -> "Seams":
        """A copy with some entries of `rules` and `emitters` replaced, and other fields set."""
        for name, given, table in (("rules", rules, self.rules), ("emitters", emitters, self.emitters)):
            if given:
                unknown = set(given) - set(table)
                if unknown:
                    raise KeyError(f"no {name} entry {sorted(unknown)} to replace (known: {sorted(table)})")
                fields[name] = MappingProxyType({**table, **given})
        return replace(self, **fields)


def default_seams() -> Seams:
    from harness.engine.rules import table as rules
    from harness.engine.analyses.activity import mark_taped_loads
    from harness.engine.analyses.ownership import owned_arrays
    from harness.engine.emission.emit_adjoints import ADJOINT_EMITTERS
    from harness.engine.runtime.launch_cache import fingerprint
    from harness.engine.analyses.memory import check_arguments
    from harness.engine.analyses.ordering import apart_in_thread, interval_exclusive
    return Seams(rules=MappingProxyType(rules.PARTIALS), emitters=MappingProxyType(ADJOINT_EMITTERS),
                 owned_arrays=owned_arrays, mark_taped_loads=mark_taped_loads,
                 interval_exclusive=interval_exclusive, apart_in_thread=apart_in_thread,
                 launch_fingerprint=fingerprint, check_arguments=check_arguments)
