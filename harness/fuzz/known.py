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
    bug: str = ""                 # what the system gets wrong, in a line (docs/fuzz.md's table)
    upstream: str = ""            # the matching upstream report, or "" where none was found

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
BOTH = ("forward", "reverse")      # a forward run shows a reverse bug too: its dot test compares with the reverse
NO_REPORT = "none found (new)"
_DESTINATION = "atomic max/min: the destination's initial value keeps the full adjoint where another value won"
_TAICHI_DESTINATION = _DESTINATION + "; every operand gets an adjoint, not only the winner"
_TICKET = "the reverse replays an atomic add whose old value is used (a ticket): the adjoints go to other slots"
_OVERWRITE = "the adjoint reads an element after the kernel overwrote it"
_STALE_SLOT = ("in a loop inside the parallel loop (a grid-stride loop), after an inner loop, the adjoint of {op} reads "
               "a forward value that the loop keeps in one slot, overwritten by its next trip")
_QUADRANTS_502 = ("quadrants#502 fixed tanh/exp in a Taichi fork (https://github.com/Genesis-Embodied-AI/quadrants/pull/502); "
                  "none in taichi-dev")
KNOWN = [
    Known("fuzz-adapters-atomic-max-destination", None, "warp", ("zero",), frozenset({"atomic-max"}),
          bug=_DESTINATION, upstream=NO_REPORT),
    Known("atomic-max-min", "bucket-min", "warp", ("zero",), frozenset({"atomic-min"}), bug=_DESTINATION,
          upstream=NO_REPORT),
    # Taichi's adjoint of an atomic max/min also reaches every operand: finite differences see it on the
    # operands (campaign seed 1358 reduced to an atomic min of a select in a grid-stride loop, fd-reverse)
    Known("fuzz-adapters-atomic-max-destination", None, "taichi", WRONG, frozenset({"atomic-max"}),
          bug=_TAICHI_DESTINATION, upstream=NO_REPORT),
    Known("atomic-max-min", "bucket-min", "taichi", WRONG, frozenset({"atomic-min"}), bug=_TAICHI_DESTINATION,
          upstream=NO_REPORT),
    # Warp: a value carried through a dynamic loop (a while loop is one) gets a wrong adjoint
    Known("warp-1694-dynamic-loop", None, "warp", WRONG, frozenset({"dynamic-loop"}),
          bug="a value carried through a dynamic loop gets a wrong adjoint (documented: Warp replays dynamic loops)",
          upstream="https://github.com/NVIDIA/warp/issues/1694 (duplicate of #729)"),
    Known("while-newton", None, "warp", WRONG, frozenset({"while"}), bug="the same through a while loop",
          upstream="https://github.com/NVIDIA/warp/issues/1694 (class)"),
    # the adjoints go to other slots (seen by finite differences or, launch to launch, by a relation)
    Known("atomic-ticket-loop", None, "warp", WRONG + RELATIONS, frozenset({"atomic-old"}),
          bug=_TICKET + " (the adjoint reads the counter's final value)",
          upstream="https://github.com/NVIDIA/warp/issues/1350 (class)"),
    Known("atomic-ticket-loop", None, "taichi", WRONG + RELATIONS, frozenset({"atomic-old"}),
          bug=_TICKET + " (the reverse kernel runs the atomic add again)", upstream=NO_REPORT),
    Known("warp-square-in-place", None, "warp", WRONG, frozenset({"overwrite"}), bug=_OVERWRITE,
          upstream="https://github.com/NVIDIA/warp/issues/947"),
    Known("warp-square-in-place", None, "taichi", WRONG, frozenset({"overwrite"}), bug=_OVERWRITE,
          upstream="https://github.com/taichi-dev/taichi/issues/8356 (class)"),
    # (threads of a partial block, past the bounds guard, get NaN adjoints from it: oracle zero; seed 90
    # with one full block fails fd-reverse instead, and passes without the guard or without the loop)
    Known("warp-1694-dynamic-loop", None, "taichi", WRONG, frozenset({"if", "dynamic-loop"}), BOTH,
          bug="a loop inside an if inside the parallel loop, its value used after the loop", upstream=NO_REPORT),
    Known("warp-1694-dynamic-loop", "static", "taichi", WRONG, frozenset({"if", "static-loop"}), BOTH,
          bug="the same with a loop of constant trip count", upstream=NO_REPORT),
    # reduced in plain Taichi (reproducers/taichi_sigbus_branch_in_guard.py); seeds 42 and 188 die the
    # same way since conditional expressions became branches
    Known("fuzz-taichi-sigbus", None, "taichi", ("crash",), frozenset({"if", "static-loop", "ternary"}), BOTH,
          bug="the process dies (SIGBUS) in reverse: inside the bounds check, a local set in an if/else and a "
              "loop-carried local", upstream=NO_REPORT),
    Known("fuzz-taichi-sigbus-ticket", None, "taichi", ("crash",), frozenset({"device-function", "if", "static-loop"}),
          BOTH, bug="the same through a device function whose if/else sets its result", upstream=NO_REPORT),
    # seed 134, reduced (reproducers/taichi_tanh_after_inner_loop.py); exp too (campaign seeds 1588, 181).
    # A grid-stride loop is itself a dynamic loop in the signature, so the inner loop cannot be
    # required: without one Taichi is right, and there is no finding to match.
    Known("fuzz-taichi-grid-stride-loops", None, "taichi", WRONG, frozenset({"grid-stride", "tanh"}), BOTH,
          bug=_STALE_SLOT.format(op="tanh"), upstream=_QUADRANTS_502),
    Known("fuzz-taichi-grid-stride-loops", "exp", "taichi", WRONG, frozenset({"grid-stride", "exp"}), BOTH,
          bug=_STALE_SLOT.format(op="exp"), upstream=_QUADRANTS_502),
    # campaign seeds 284, 1376, 447 (reproducers/taichi_max_after_inner_loop.py)
    Known("fuzz-taichi-max-after-inner-loop", None, "taichi", WRONG, frozenset({"grid-stride", "max"}), BOTH,
          bug=_STALE_SLOT.format(op="max") + ": the operand that won in another trip gets it", upstream=NO_REPORT),
    Known("fuzz-taichi-max-after-inner-loop", "min", "taichi", WRONG, frozenset({"grid-stride", "min"}), BOTH,
          bug=_STALE_SLOT.format(op="min") + ": the operand that won in another trip gets it", upstream=NO_REPORT),
    # campaign seed 1462, whose if and loop the coarse loop-inside-if class above matched with no loop
    # inside an if (reproducers/taichi_branch_local_through_loop.py)
    Known("fuzz-taichi-branch-local-through-loop", None, "taichi", WRONG, frozenset({"grid-stride", "if", "static-loop"}),
          BOTH, bug="in a grid-stride loop, a local set in an if, carried into a loop and used nonlinearly in a later "
                    "if: the adjoint reads a wrong value of it", upstream=NO_REPORT),
]


def known_classes(signature: tuple) -> list[str]:
    """The names of the known classes a finding's signature (engine, mode, oracle, constructs) may be."""
    return sorted({k.name for k in KNOWN if k.matches(signature)})


def markdown_table() -> str:
    """docs/fuzz.md's table of the known classes (regenerate: python -m harness.fuzz.known)."""
    lines = ["| engine | case | bug | a finding matches with | upstream |", "|---|---|---|---|---|"]
    for k in KNOWN:
        when = (f"{'/'.join(k.modes)}; {', '.join(k.oracles)}; kernel has {', '.join(sorted(k.requires))}")
        lines.append(f"| {k.engine} | `{k.name}` | {k.bug} | {when} | {k.upstream} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
