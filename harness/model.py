"""Plain typed records that cross module boundaries.

The case loader produces `Case`; expansion produces `Run`; the runner produces `Outcome`; the
results store writes `Outcome.to_json()` one line per run; the report reads only those lines.
Nothing here imports numba, numpy or yaml.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harness.core.records import MODES, JobRecord  # noqa: F401 (shared with the engine)
from harness.policy import FD_DIRECTIONS, STATES  # noqa: F401 (STATES: its home is the policy)

ACTIVITIES = ("const", "duplicated", "duplicated_no_need", "active", "batch_duplicated")
FLOAT_DTYPES = ("float32", "float64")


# ----------------------------------------------------------------------------- case records

@dataclass(frozen=True)
class ArraySpec:
    shape: tuple[int, ...]
    dtype: str                      # numpy dtype name: float32, float64, int32, int64, bool, ...,
                                    # or xoroshiro128p (an rng_states argument's record dtype)
    init: Any = "zeros"             # zeros | ones | arange | normal | {uniform: [lo, hi]} |
                                    # {normal: [mu, sigma]} | {values: [...]} |
                                    # {rng_states: {seed, subsequence_start}}
    layout: dict | None = None      # {strides|transpose|broadcast: ...} (non-contiguous views)


@dataclass(frozen=True)
class ArgSpec:
    name: str
    kind: str                       # array | scalar | type | function
    activity: str = "const"         # one of ACTIVITIES
    array: ArraySpec | None = None  # kind == array
    value: Any = None               # kind == scalar: the value; type/function: the reference
    dtype: str | None = None        # kind == scalar
    width: int | None = None        # activity == batch_duplicated
    shadow: dict | None = None      # {init: ..., layout: ...} (either or both) | {alias: arg}
    alias: str | None = None        # kind == array: this argument is the buffer of that argument
    line: int | None = None         # line of this argument in the case file


@dataclass(frozen=True)
class LaunchSpec:
    style: str = "kernel"           # kernel | broadcast | map
    grid: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None
    threads: tuple[int, ...] | None = None


@dataclass(frozen=True)
class FDSpec:
    directions: int = FD_DIRECTIONS
    rtol: float | None = None       # None: per-dtype default
    atol: float | None = None


@dataclass(frozen=True)
class CheckSpec:
    fd: FDSpec | None = field(default_factory=FDSpec)   # None: FD oracle disabled
    dot: bool = True
    repeat: int = 1
    zero_guard: bool = True
    nested: dict | None = None      # {function, mode, args: {name: {shadow: other}}}
    activities: str | None = None   # "all": enumerate activity combinations
    block_sweep: tuple[int, ...] | None = None
    # exact expected values {rtol?, atol?, primal|forward|reverse: {name: values}}
    values: dict | None = None


@dataclass(frozen=True)
class Expectation:
    kind: str = "pass"              # pass | error | xfail | unsupported
    error_type: str | None = None   # error: class name
    match: str | None = None        # error / unsupported: regex searched in the message
    argument: int | None = None     # error: 0-based argument position
    param: str | None = None        # error: parameter name
    reason: str | None = None       # xfail
    link: str | None = None         # xfail
    strict: bool = True             # xfail
    state: str | None = None        # xfail: the failing state the known bug shows (e.g. NONDET)
    crash: bool = False             # xfail: the known bug kills the process running the run


@dataclass(frozen=True)
class KernelRef:
    path: str                       # project-relative, e.g. kernels/broadcast.py
    function: str                   # e.g. add

    def __str__(self) -> str:
        return f"{self.path}:{self.function}"


@dataclass(frozen=True)
class LaunchStep:
    """One launch of a program: a kernel, its launch, and the buffers it takes."""
    kernel: KernelRef
    launch: LaunchSpec
    args: tuple[str, ...]           # buffer (case argument or program buffer) names, in parameter order
    line: int | None = None


@dataclass(frozen=True)
class LoopStep:
    """`repeat` times the steps in order (a time-stepping loop)."""
    repeat: int
    steps: tuple                    # LaunchStep | LoopStep


@dataclass(frozen=True)
class ProgramSpec:
    buffers: tuple[ArgSpec, ...] = ()   # intermediate buffers the case creates (zeros)
    steps: tuple = ()                   # LaunchStep | LoopStep

    def launches(self) -> list[LaunchStep]:
        """Every launch in execution order, loops unrolled."""
        out: list[LaunchStep] = []

        def walk(steps):
            for step in steps:
                if isinstance(step, LoopStep):
                    for _ in range(step.repeat):
                        walk(step.steps)
                else:
                    out.append(step)
        walk(self.steps)
        return out


@dataclass(frozen=True)
class Case:
    id: str
    source: str                     # project-relative path of the YAML file
    kernel: KernelRef | None        # the numba.cuda kernel (None: the case gives native kernels only)
    args: tuple[ArgSpec, ...]
    title: str = ""
    description: str = ""
    links: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    launch: LaunchSpec = field(default_factory=LaunchSpec)
    modes: tuple[str, ...] = ("forward", "reverse")
    dtypes: tuple[str | None, ...] = (None,)   # None: as declared
    seed: int = 0
    check: CheckSpec = field(default_factory=CheckSpec)
    expect: Expectation = field(default_factory=Expectation)
    # an expectation per mode; expand_runs gives each run its mode's as `expect`
    expect_by_mode: dict | None = None
    engine: dict = field(default_factory=dict)  # launch, fold_constants, nested_config, ...
    engine_expect: dict = field(default_factory=dict)  # engine name -> Expectation, or mode -> Expectation (`engines:`)
    jobs: tuple[dict, ...] = ()
    ptx: dict = field(default_factory=dict)     # {mode: {fact: value}}
    program: ProgramSpec | None = None           # a sequence of launches (kernel = the first's)
    replay: dict | None = None                   # {restore: [buffers]}: primal first, reverse later
    variant: str | None = None      # set on the copies made for each variant
    variant_names: tuple[str, ...] = ()  # on the base case: every variant it declares
    line: int = 1                   # first line of the case (or of its variant block)
    native: dict = field(default_factory=dict)  # engine name -> KernelRef of a kernel in its own language

    def kernel_for(self, engine: str) -> KernelRef | None:
        """The kernel `engine` runs: its native kernel where the case gives one, else the case's."""
        return self.native.get(engine, self.kernel)


@dataclass(frozen=True)
class Run:
    """One configuration of one case: case x variant x mode x dtype x backend."""
    case: Case                      # with the variant's overrides already applied
    mode: str
    dtype: str | None
    backend: str                    # sim | ptx | cuda
    engine: str = "bundled"         # bundled | warp | taichi (harness/adapters)
    skip: str | None = None         # why this engine does not run the case (adapters/expectations.py)

    @property
    def name(self) -> str:
        parts = [self.case.variant] if self.case.variant else []
        parts.append(self.mode)
        if self.dtype:
            parts.append(self.dtype)
        name = "-".join(parts)
        return name if self.engine == "bundled" else f"{name}@{self.engine}"

    @property
    def run_id(self) -> str:
        return f"{self.case.source}::{self.name}"


# ----------------------------------------------------------------------------- outcome records

@dataclass
class WorstEntry:
    index: str                      # e.g. "out[3]" or "dir 1"
    ad: float
    fd: float
    abs_err: float
    rel_err: float


@dataclass
class OracleVerdict:
    name: str                       # fd-forward | fd-reverse | dot | zero | nondet | ptx | jobs | ...
    verdict: str                    # pass | fail | skip | error
    message: str = ""
    metrics: dict = field(default_factory=dict)
    worst: list[WorstEntry] = field(default_factory=list)


@dataclass
class ErrorRecord:
    type: str
    message: str
    category: str | None = None
    traceback: str | None = None


@dataclass
class Outcome:
    run_id: str
    case_id: str
    source: str
    variant: str | None
    mode: str
    dtype: str | None
    backend: str
    state: str                      # one of STATES
    engine: str = "bundled"         # the AD engine that ran it (harness/adapters)
    engine_version: str = ""
    message: str = ""
    expect: str = "pass"
    title: str = ""
    description: str = ""
    tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    kernel: str = ""
    args: list[dict] = field(default_factory=list)     # {name, kind, activity, shape, dtype}
    oracles: list[OracleVerdict] = field(default_factory=list)
    error: ErrorRecord | None = None
    jobs: list[JobRecord] = field(default_factory=list)
    ptx: dict = field(default_factory=dict)            # {kernel name: {fact: value}}
    sources: dict = field(default_factory=dict)        # {mode: generated source path}
    timings: dict = field(default_factory=dict)        # {phase: seconds}
    repro: str = ""
    started: float = 0.0
    duration: float = 0.0
    engine_warnings: list[str] = field(default_factory=list)   # raised by Warp's/Taichi's own code in this run

    def to_json(self) -> dict:
        record = asdict(self)
        record["state"] = str(self.state)     # plain data: a record crosses processes (xdist's execnet)
        return record

    @staticmethod
    def from_json(data: dict) -> "Outcome":
        data = dict(data)
        data["oracles"] = [OracleVerdict(**{**o, "worst": [WorstEntry(**w) for w in o.get("worst", [])]})
                           for o in data.get("oracles", [])]
        data["jobs"] = [JobRecord(**j) for j in data.get("jobs", [])]
        if data.get("error"):
            data["error"] = ErrorRecord(**data["error"])
        known = Outcome.__dataclass_fields__
        return Outcome(**{k: v for k, v in data.items() if k in known})
