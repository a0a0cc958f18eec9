"""The state the derivative passes share (pipeline.py): the inputs the Engine sets, the options
whole, and each pass's results, field by field. Its own module so that passes defined beside
their analyses (nested.py's device passes) can build one without importing the pipeline."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.engine.ir.ssa import KernelIR
from harness.engine.options import EngineOptions

if TYPE_CHECKING:                     # codegen imports the emitters; the state needs only the name
    from harness.engine.emission.codegen import Signature


@dataclass
class PassState:
    """What the passes share: the inputs (set by the Engine) and each pass's results."""
    src: Any                          # frontend.KernelSource
    params: list                      # ir.Param per kernel argument
    infos: list                       # signature.ArgInfo per kernel argument
    mode: str                         # forward | reverse
    launch_shape: Any                 # analysis.LaunchShape
    job: Any                          # jobs.CompilerJob of this kernel
    seams: Any                        # seams.Seams
    options: EngineOptions = field(default_factory=EngineOptions)
    verify_ir: bool = False                           # also for the device pipelines run inside a pass
    declared: dict | None = None                      # param -> activity as called (default: from infos)
    nested: Any = None                                # device pipeline: the ir.Nested call it builds
    kernel_ir: KernelIR | None = None                 # device pipeline: the calling kernel's IR
    index: int = 0                                    # device pipeline: the call's position in the kernel
    ir: KernelIR | None = None
    activity: dict = field(default_factory=dict)      # name -> activity, local arrays included
    varied: set = field(default_factory=set)          # values that carry a derivative
    owned: set = field(default_factory=set)           # arrays whose adjoints need no atomics (reverse)
    sig: Signature | None = None
    extrema: list = field(default_factory=list)       # atomic max/min statements
    fname: str = ""                                   # the generated kernel's name
    source: str = ""                                  # the generated module's text (a device pipeline:
                                                      # the function's `def` text)
    device_functions: list = field(default_factory=list)   # (function name, def text) per autodiff call
    nested_names: dict = field(default_factory=dict)       # id(ir.Nested) -> its device function's name
    nested_tapes: dict = field(default_factory=dict)       # id(ir.Nested) -> {loop line: file} of a reverse
                                                           # that tapes dynamic loops (it takes the overflow flag)
