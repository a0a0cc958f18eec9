"""The engine's options: one record, carried whole through the passes (pipeline.PassState.options)
and into the code generator (codegen.Signature.options, read as EmitState.options).

A case's `engine:` mapping becomes this record field by field (EngineOptions.from_dict); the case
schema's `engine` properties and docs/case-format.md's `engine` table list the same fields
(tests/unit/test_case_format.py, tests/unit/test_docs.py).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EngineOptions:
    launch: str = "split"             # split | packed (broadcast front end)
    fold_constants: bool = True
    nested_config: str = "inherit"    # inherit | native
    fastmath: bool = False
    debug: bool = False
    tape_size: int = 64               # iterations of a dynamic loop the reverse sweep can replay
    recompute_limit: int = 64         # iterations of an eligible loop rebuilt from its entry registers (emit_loops.py)
    gather_stencils: bool = False     # stencil adjoints gathered from their readers (emit_gather.py): off, slower on an H200
    coarsen_blocks_per_sm: int = 32   # most physical blocks per multiprocessor of a coarsened reverse (coarsen.py); 0: never
    loop_jacobian_limit: int = 16     # most live-ins x live-outs of a loop whose reverse goes through its Jacobian (emit_loop_jacobian.py)

    @staticmethod
    def from_dict(d: dict | None, defaults: dict | None = None) -> "EngineOptions":
        """Options from a case's `engine:` mapping; `defaults` replace the class's defaults."""
        return EngineOptions(**{**(defaults or {}), **(d or {})})
