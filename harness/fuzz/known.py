"""The bugs of Warp and Taichi that differential fuzzing already knows, one class each.

A class names the corpus case that shows the bug with that engine's xfail (an upstream report's
case, or a triaged fuzz finding's, "found by fuzzing; not yet reported"). A finding of that engine
in one of the class's modes, failing one of its oracles ("crash" for a crash), whose kernel has
every construct of `requires` (findings.constructs) may be that bug again. The bounded campaign
(tests/slow/test_fuzz_differential.py) turns known findings into an xfail; `harness fuzz --triage`
groups a campaign's findings by the classes their kernels could be and names, for each reduced
finding, the classes it still matches.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Known:
    case: str
    variant: str | None
    engine: str
    oracles: tuple
    requires: frozenset
    modes: tuple = ("reverse",)

    @property
    def name(self) -> str:
        return f"{self.case}:{self.variant}" if self.variant else self.case

    def document(self) -> dict:
        import yaml
        doc = yaml.safe_load((ROOT / "cases" / f"{self.case}.yaml").read_text())
        return {**doc, **doc["variants"][self.variant]} if self.variant else doc

    def kernel_constructs(self) -> set:
        from harness.fuzz.findings import constructs
        path, name = self.document()["kernel"].split(":")
        tree = ast.parse((ROOT / path).read_text())
        function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        return set(constructs(ast.unparse(function)))

    def matches(self, signature: tuple) -> bool:
        engine, mode, oracle, found = signature
        return engine == self.engine and mode in self.modes and oracle in self.oracles and self.requires <= set(found)


WRONG = ("fd-reverse", "zero", "dot")
RELATIONS = ("rel-noneed", "rel-const", "rel-batch")
KNOWN = [
    Known("fuzz-adapters-atomic-max-destination", None, "warp", ("zero",), frozenset({"atomic-max"})),
    Known("fuzz-adapters-atomic-max-destination", None, "taichi", ("zero",), frozenset({"atomic-max"})),
    Known("atomic-max-min", "bucket-min", "warp", ("zero",), frozenset({"atomic-min"})),
    Known("atomic-max-min", "bucket-min", "taichi", ("zero",), frozenset({"atomic-min"})),
    # Taichi's adjoint of an atomic max/min also reaches every operand, not only the winner: finite
    # differences see it on the operands (campaign seed 1358 reduced to an atomic min of a select in a
    # grid-stride loop, failing fd-reverse)
    Known("fuzz-adapters-atomic-max-destination", None, "taichi", WRONG, frozenset({"atomic-max"})),
    Known("atomic-max-min", "bucket-min", "taichi", WRONG, frozenset({"atomic-min"})),
    # Warp: a value carried through a dynamic loop (a while loop is one) gets a wrong adjoint
    Known("warp-1694-dynamic-loop", None, "warp", WRONG, frozenset({"dynamic-loop"})),
    Known("while-newton", None, "warp", WRONG, frozenset({"while"})),
    # Warp and Taichi: the reverse replays an atomic add whose old value is used (a ticket), so the
    # adjoints go to other slots (seen by finite differences or, launch to launch, by a relation)
    Known("atomic-ticket-loop", None, "warp", WRONG + RELATIONS, frozenset({"atomic-old"})),
    Known("atomic-ticket-loop", None, "taichi", WRONG + RELATIONS, frozenset({"atomic-old"})),
    # Warp and Taichi: the adjoint reads an element after the kernel overwrote it (Warp issue 947)
    Known("warp-square-in-place", None, "warp", WRONG, frozenset({"overwrite"})),
    Known("warp-square-in-place", None, "taichi", WRONG, frozenset({"overwrite"})),
    # Taichi: a loop inside an if inside the parallel loop, its value used after the loop
    # (threads of a partial block, past the bounds guard, get NaN adjoints from it: oracle zero; seed 90
    # with one full block fails fd-reverse instead, and passes without the guard or without the loop)
    # (a forward run shows it too: its dot test compares with Taichi's reverse)
    Known("warp-1694-dynamic-loop", None, "taichi", WRONG, frozenset({"if", "dynamic-loop"}), ("forward", "reverse")),
    Known("warp-1694-dynamic-loop", "static", "taichi", WRONG, frozenset({"if", "static-loop"}), ("forward", "reverse")),
    # Taichi's process dies (SIGBUS) in reverse on seed 100's kernel, reduced in plain Taichi
    # (reproducers/taichi_sigbus_branch_in_guard.py) to a local set in an if/else (a conditional
    # expression translates to one) and a loop-carried local inside the bounds check: seeds 42 and
    # 188 die the same way since conditional expressions became branches
    Known("fuzz-taichi-sigbus", None, "taichi", ("crash",), frozenset({"if", "static-loop", "ternary"}),
          ("forward", "reverse")),
    # the same through a device function whose if/else sets its result (seed 118)
    Known("fuzz-taichi-sigbus-ticket", None, "taichi", ("crash",), frozenset({"device-function", "if", "static-loop"}),
          ("forward", "reverse")),
    # Taichi's reverse of seed 134's kernel is wrong, reduced (reproducers/taichi_tanh_after_inner_loop.py)
    # to tanh after an inner loop inside a grid-stride loop: the adjoint reads a stale forward tanh; exp
    # too (campaign seeds 1588, 181). A grid-stride loop is itself a dynamic loop in the signature, so
    # the inner loop cannot be required: without one Taichi is right, and there is no finding to match.
    Known("fuzz-taichi-grid-stride-loops", None, "taichi", WRONG, frozenset({"grid-stride", "tanh"}),
          ("forward", "reverse")),
    Known("fuzz-taichi-grid-stride-loops", "exp", "taichi", WRONG, frozenset({"grid-stride", "exp"}),
          ("forward", "reverse")),
    # the same slot, read by the adjoint of max/min: it goes to the operand that won in another trip of
    # the grid-stride loop (campaign seeds 284, 1376, 447; reproducers/taichi_max_after_inner_loop.py)
    Known("fuzz-taichi-max-after-inner-loop", None, "taichi", WRONG, frozenset({"grid-stride", "max"}),
          ("forward", "reverse")),
    Known("fuzz-taichi-max-after-inner-loop", "min", "taichi", WRONG, frozenset({"grid-stride", "min"}),
          ("forward", "reverse")),
    # in a grid-stride loop, a local set in an if, carried into a loop and used nonlinearly in a later
    # if: the adjoint reads a wrong value of it (campaign seed 1462, whose if and loop the coarse
    # loop-inside-if class above matched with no loop inside an if; reproducers/taichi_branch_local_through_loop.py)
    Known("fuzz-taichi-branch-local-through-loop", None, "taichi", WRONG, frozenset({"grid-stride", "if", "static-loop"}),
          ("forward", "reverse")),
]


def known_classes(signature: tuple) -> list[str]:
    """The names of the known classes a finding's signature (engine, mode, oracle, constructs) may be."""
    return sorted({k.name for k in KNOWN if k.matches(signature)})
