"""The IR verifier: the rules every lowered kernel keeps. The pipeline runs it after every pass in
debug runs (Engine(verify_ir=True), or HARNESS_VERIFY_IR=1); the tests run it on every kernel."""
from __future__ import annotations

from collections import Counter

from harness.engine.ir.ssa import Assign, Atomic, If, KernelIR, Load, Loop, Nested, Prim, Store


def _names(atoms) -> list[str]:
    return [a for a in atoms if isinstance(a, str)]


def ssa_problems(ir: KernelIR) -> list[str]:
    """Each name assigned once (phi targets included), every use dominated by its definition
    (branch-local values stay in their branch), phi sources defined on their own side."""
    problems, targets = [], []

    def uses(e):
        if isinstance(e, Prim):
            return _names(e.args) + _names(e.partials or ())
        if isinstance(e, Load):
            return _names(e.index)
        return []

    def visit(stmts, defined):
        for s in stmts:
            if isinstance(s, Assign):
                problems.extend(f"line {s.line}: {s.target} uses undefined {u}" for u in uses(s.expr) if u not in defined)
                targets.append(s.target)
                defined.add(s.target)
            elif isinstance(s, Store):
                problems.extend(f"line {s.line}: store to {s.array} uses undefined {u}"
                                for u in _names(s.index) + _names([s.value]) if u not in defined)
            elif isinstance(s, Atomic):
                problems.extend(f"line {s.line}: atomic on {s.array} uses undefined {u}"
                                for u in _names(s.index) + _names([s.value]) if u not in defined)
                if s.target is not None:
                    targets.append(s.target)
                    defined.add(s.target)
            elif isinstance(s, Nested):
                targets.extend(s.targets)
                defined.update(s.targets)
            elif isinstance(s, Loop):         # values made inside stay inside; registers exist before
                inner = set(defined) | ({s.var} if s.var else set())
                inner = visit(s.header, inner)
                visit(s.body, inner)
            elif isinstance(s, If):
                if isinstance(s.cond, str) and s.cond not in defined:
                    problems.append(f"line {s.line}: if-condition {s.cond} undefined")
                then_defs = visit(s.body, set(defined))
                else_defs = visit(s.orelse, set(defined))
                for target, a, b in s.phis:
                    if isinstance(a, str) and a not in then_defs:
                        problems.append(f"line {s.line}: phi {target} <- {a} not defined in the then-branch")
                    if isinstance(b, str) and b not in else_defs:
                        problems.append(f"line {s.line}: phi {target} <- {b} not defined in the else-branch")
                    targets.append(target)
                    defined.add(target)
        return defined

    visit(ir.body, {p.name for p in ir.params if p.kind == "scalar"})
    problems += [f"{name} assigned {n} times" for name, n in Counter(targets).items() if n > 1]
    return problems


def ir_problems(ir: KernelIR) -> list[str]:
    """Every rule the verifier checks."""
    problems = []
    names = [p.name for p in ir.local_arrays]
    problems += [f"local array {n} listed {k} times" for n, k in Counter(names).items() if k > 1]
    params = {p.name for p in ir.params}
    problems += [f"local array {n} shadows a parameter" for n in names if n in params]
    return problems + ssa_problems(ir)


class IRError(AssertionError):
    """The IR broke a rule after a pass (a bug in the engine, never in the kernel)."""


def verify(ir: KernelIR, after: str) -> None:
    problems = ir_problems(ir)
    if problems:
        raise IRError(f"IR of {ir.name} invalid after pass '{after}': " + "; ".join(problems[:10]))
