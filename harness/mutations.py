"""Planted AD bugs for the mutation self-test (GitHub issue 5, item 6).

Each `Mutant` plants one classic automatic-differentiation bug in the engine by monkeypatching its
internals for the duration of a `with` block, and restores every patched attribute on exit (also
when the block raises). Engine files are never edited. Use:

    from harness.mutations import MUTANTS, get_mutant
    with get_mutant("flip-sin-rule")():
        outcome = Runner(root, "sim").execute(run)      # a fresh Runner: plans are cached per engine

Patches act when a kernel's derivative is *generated*, so only plans built inside the block are
mutated: build a new `harness.runner.Runner` (hence new engines) under each mutant. Generated
sources are content-hashed files, so a mutated code generator writes different files and never
reuses an unmutated module (harness.engine.cache).

Races (a dropped atomic, a dropped barrier, a lost Active reduction) need simulated threads that
actually interleave: numba's simulator runs a block's threads as Python threads that the GIL
switches only every 5 ms, so a non-atomic `+=` almost never loses an update there. Run such
mutants under `interleaved_threads()` (harness/mutation_run.py does so for every run on the
simulator, baseline included) to get a GPU's interleavings.

The campaign (every case under every mutant, one subprocess each) is harness/mutation_run.py and
`harness mutate`; docs/mutations.md has the last measured table.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Iterator

import numpy as np

# One switch of the GIL every microsecond: the simulator's threads interleave inside statements.
INTERLEAVED_SWITCH_INTERVAL = 1e-6

_MISSING = object()


# ----------------------------------------------------------------------------- patching

class Patch:
    """Set attributes for the duration of a `with` block; restore them all (in reverse) on exit."""

    def __init__(self):
        self._saved: list[tuple[Any, str, Any]] = []

    def set(self, obj, name: str, value) -> None:
        # a class: only its own attribute (an inherited one is restored by deleting the override)
        old = obj.__dict__.get(name, _MISSING) if isinstance(obj, type) else getattr(obj, name, _MISSING)
        self._saved.append((obj, name, old))
        setattr(obj, name, value)

    def item(self, mapping: dict, key, value) -> None:
        self._saved.append((mapping, key, mapping.get(key, _MISSING)))
        mapping[key] = value

    def rebind(self, module, name: str, value) -> list[str]:
        """Replace a module-level function in its module and in every harness module that
        imported it by name (`from .analysis import owned_arrays`); return where it was bound."""
        original = getattr(module, name)
        where = []
        for mod_name, mod in sorted(sys.modules.items()):
            if (mod_name == "harness" or mod_name.startswith("harness.")) and mod is not None \
                    and getattr(mod, name, None) is original:
                self.set(mod, name, value)
                where.append(mod_name)
        return where

    def restore(self) -> None:
        while self._saved:
            obj, name, old = self._saved.pop()
            if isinstance(obj, dict):
                if old is _MISSING:
                    obj.pop(name, None)
                else:
                    obj[name] = old
            elif old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)


@contextlib.contextmanager
def _patching(install: Callable[[Patch], None]) -> Iterator[Patch]:
    patch = Patch()
    try:
        install(patch)
        yield patch
    finally:
        patch.restore()


@contextlib.contextmanager
def interleaved_threads(interval: float = INTERLEAVED_SWITCH_INTERVAL):
    """Make the simulator's threads interleave like a GPU's (see the module docstring).

    The simulator's own `cuda.shared.array` is a check-then-set on a dict (look the allocation up
    by file and line, else create it) that interleaved threads can race through, each getting a
    private "shared" array; it is made atomic here for the duration."""
    old = sys.getswitchinterval()
    patch = Patch()
    try:
        simulated = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"     # never import numba otherwise
        if simulated:
            from numba.core import config
            simulated = bool(config.ENABLE_CUDASIM)
        if simulated:
            import threading
            from numba.cuda.simulator.kernelapi import FakeCUDAShared
            allocate, lock = FakeCUDAShared.array, threading.Lock()

            def array(self, shape, dtype):
                if shape == 0:                # dynamic shared memory: one buffer, no lookup
                    return allocate(self, shape, dtype)
                from numba.core import types
                from numba.np import numpy_support
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                frame = sys._getframe(1)      # the declaring line, as the simulator keys it
                caller = (frame.f_code.co_filename, frame.f_lineno)
                with lock:
                    res = self._allocations.get(caller)
                    if res is None:
                        res = self._allocations[caller] = np.empty(shape, dtype)
                return res

            patch.set(FakeCUDAShared, "array", array)
        sys.setswitchinterval(interval)
        yield
    finally:
        sys.setswitchinterval(old)
        patch.restore()


# ----------------------------------------------------------------------------- the registry

@dataclass(frozen=True)
class Mutant:
    name: str
    plants: str                       # the bug, in one line (the table's "what it plants")
    patch_point: str                  # what is monkeypatched
    install: Callable[[Patch], None] = dataclasses.field(repr=False)
    probe: str = ""                   # the run id of a small case that catches it (tests/test_mutations.py)
    race: bool = False                # only interleaved threads show it (see interleaved_threads)
    changes_source: bool = True       # the probe's generated kernel differs from the unmutated one

    def __call__(self) -> ContextManager[Patch]:
        """`with mutant():` plants the bug; leaving the block removes it."""
        return _patching(self.install)


MUTANTS: list[Mutant] = []


def mutant(name: str, plants: str, patch_point: str, probe: str, **kw):
    def register(install: Callable[[Patch], None]):
        if any(m.name == name for m in MUTANTS):
            raise ValueError(f"mutant '{name}' registered twice")
        MUTANTS.append(Mutant(name, plants, patch_point, install, probe, **kw))
        return install
    return register


def get_mutant(name: str) -> Mutant:
    for m in MUTANTS:
        if m.name == name:
            return m
    raise KeyError(f"no mutant '{name}' (known: {', '.join(m.name for m in MUTANTS)})")


def patched_attributes() -> list[tuple[Any, str]]:
    """Every (object, attribute) some mutant patches: the registry test snapshots them."""
    from .engine import codegen, rules
    from .engine.launch import Engine, EngineOptions
    mods = [m for n, m in sorted(sys.modules.items()) if (n == "harness" or n.startswith("harness.")) and m]
    out = [(m, name) for m in mods for name in ("owned_arrays", "mark_taped_loads", "function_text")
           if hasattr(m, name)]
    out += [(codegen.Emitter, name) for name in ("accumulate_array", "reverse", "reverse_loop")]
    out += [(Engine, "_build_nested"), (EngineOptions.__init__, "__defaults__"), (rules.PARTIALS, "sin")]
    return out


# ----------------------------------------------------------------------------- helpers

def _engine():
    """(analysis, codegen, launch) modules; every module that imports engine functions by name is
    loaded first, so that `Patch.rebind` finds (and later restores) each of its bindings."""
    import importlib
    for name in ("harness.engine.analysis", "harness.engine.codegen", "harness.engine.nested",
                 "harness.engine.launch", "harness.frontends.broadcast", "harness.runner"):
        importlib.import_module(name)
    m = sys.modules
    return m["harness.engine.analysis"], m["harness.engine.codegen"], m["harness.engine.launch"]


def _per_statement_reverse(patch: Patch, select: Callable, rewrite: Callable[[list[str], Any], list[str]]):
    """Wrap Emitter.reverse so that the adjoint lines of each statement chosen by
    `select(emitter, stmt)` pass through `rewrite(lines, emitter)`. Emitting statement by statement
    is what the original does (it keeps no state between statements), so unselected statements
    produce exactly the original text; nested blocks recurse through the wrapper."""
    _, codegen, _ = _engine()
    original = codegen.Emitter.reverse

    def reverse(self, stmts):
        for s in reversed(stmts):
            start = len(self.lines)
            original(self, [s])
            if select(self, s):
                self.lines[start:] = rewrite(self.lines[start:], self)

    patch.set(codegen.Emitter, "reverse", reverse)


# ----------------------------------------------------------------------------- the mutants

@mutant("drop-atomic",
        "every array's adjoint is claimed thread-owned: reads shared by threads get a plain `+=` "
        "instead of `cuda.atomic.add` (lost updates)",
        "analysis.owned_arrays (and every module that imported it)",
        probe="cases/contended-adjoint.yaml::reverse", race=True)
def _drop_atomic(patch: Patch):
    analysis, _, _ = _engine()
    original = analysis.owned_arrays

    def owned_arrays(ir, launch):
        arrays = {p.name for p in list(ir.params) + list(ir.local_arrays) if p.kind != "scalar"}
        return set(original(ir, launch)) | arrays

    patch.rebind(analysis, "owned_arrays", owned_arrays)


@mutant("flip-sin-rule",
        "the derivative rule of sin has the wrong sign: d sin(x) = -cos(x)",
        "rules.PARTIALS['sin']",
        probe="cases/math-heavy.yaml::reverse-float64")
def _flip_sin(patch: Patch):
    from .engine import rules
    patch.item(rules.PARTIALS, "sin", ("-cos(x)",))


def _is_prim_assign(em, s) -> bool:
    from .engine.analysis import SHUFFLES
    from .engine.ir import Assign, Prim
    return isinstance(s, Assign) and s.target in em.varied and isinstance(s.expr, Prim) \
        and s.expr.op not in SHUFFLES


_ACCUMULATE = re.compile(r"^(\s*)(\w+) \+= ")


@mutant("assign-not-accumulate",
        "the adjoint of a primitive's operand is assigned (`dx = dr * p`) instead of accumulated "
        "(`dx += dr * p`): a value used twice keeps only its last use's adjoint",
        "codegen.Emitter.reverse (primitive assignments)",
        probe="cases/polynomial.yaml::reverse-float64")
def _assign_not_accumulate(patch: Patch):
    _per_statement_reverse(patch, _is_prim_assign,
                           lambda lines, em: [_ACCUMULATE.sub(r"\1\2 = ", line) for line in lines])


@mutant("skip-loop-replay",
        "the reverse sweep of a dynamic loop restores the taped registers but does not replay the "
        "loop body: every iteration's adjoint sees the last iteration's intermediate values "
        "(Warp's unreplayed dynamic loops)",
        "codegen.Emitter.reverse_loop (replay_block suppressed inside it)",
        probe="cases/loop-break.yaml::reverse")
def _skip_loop_replay(patch: Patch):
    _, codegen, _ = _engine()
    original = codegen.Emitter.reverse_loop

    def reverse_loop(self, s):
        outermost = "replay_block" not in self.__dict__
        if outermost:
            self.replay_block = lambda *args, **kw: None
        try:
            original(self, s)
        finally:
            if outermost:
                del self.replay_block

    patch.set(codegen.Emitter, "reverse_loop", reverse_loop)


@mutant("drop-reverse-barrier",
        "`cuda.syncthreads()` is not mirrored in the reverse sweep: threads read shared-memory "
        "adjoints before their neighbours have written them",
        "codegen.Emitter.reverse (Barrier statements)",
        probe="cases/shared-neighbour.yaml::reverse", race=True)
def _drop_reverse_barrier(patch: Patch):
    from .engine.ir import Barrier
    _per_statement_reverse(patch, lambda em, s: isinstance(s, Barrier), lambda lines, em: [])


@mutant("clear-shadow",
        "a load's adjoint overwrites the array's shadow (`dx[i] = v`) instead of accumulating into "
        "it: the incoming cotangent of an array the kernel only reads is cleared",
        "codegen.Emitter.accumulate_array",
        probe="cases/warp-947-write-after-read.yaml::reverse-float64")
def _clear_shadow(patch: Patch):
    from .engine.codegen import Emitter, index_text

    def accumulate_array(self, array, lane, index, value):
        self.line(f"{self.d(array, lane)}[{index_text(index)}] = {value}")

    patch.set(Emitter, "accumulate_array", accumulate_array)


@mutant("nested-host-config",
        "device-side autodiff's child compile jobs are built for the host target instead of "
        "inheriting the kernel's (Enzyme.jl 2395)",
        "launch.Engine._build_nested (nested_config forced to native)",
        probe="cases/enzyme-jl-2395-nested-reverse.yaml::primal-float32", changes_source=False)
def _nested_host_config(patch: Patch):
    _, _, launch = _engine()
    original = launch.Engine._build_nested

    def _build_nested(self, *args, **kw):
        saved = self.options
        self.options = dataclasses.replace(saved, nested_config="native")
        try:
            return original(self, *args, **kw)
        finally:
            self.options = saved

    patch.set(launch.Engine, "_build_nested", _build_nested)


@mutant("no-fold-constants",
        "the broadcast front end stops folding types and functions into the kernel by default: "
        "a folded constant is passed as a kernel argument (the reverted GPUArrays.jl PR 539)",
        "launch.EngineOptions defaults (fold_constants=False)",
        probe="cases/gpuarrays-539-revert-type.yaml::primal-float64", changes_source=False)
def _no_fold_constants(patch: Patch):
    _, _, launch = _engine()
    init = launch.EngineOptions.__init__
    names = [f.name for f in dataclasses.fields(launch.EngineOptions)]
    defaults = list(init.__defaults__)
    defaults[names.index("fold_constants")] = False
    patch.set(init, "__defaults__", tuple(defaults))


_ACTIVE_ATOMIC = re.compile(r"^(\s*)cuda\.atomic\.add\((\w*active_out), (\d+), (.+)\)$")


@mutant("lose-active-reduction",
        "an Active scalar's per-thread adjoints are stored (`active_out[k] = d_a`) instead of "
        "atomically summed over all threads: every thread but the last is lost",
        "codegen.function_text (the Active reduction line)",
        probe="cases/axpy.yaml::reverse-float64")
def _lose_active_reduction(patch: Patch):
    _, codegen, _ = _engine()
    original = codegen.function_text

    def function_text(*args, **kw):
        name, text = original(*args, **kw)
        return name, "\n".join(_ACTIVE_ATOMIC.sub(r"\1\2[\3] = \4", line) for line in text.split("\n"))

    patch.rebind(codegen, "function_text", function_text)


_TAPE_READ = re.compile(r"(_tape_\w+)\[_r(\d+)\]")


@mutant("stale-tape",
        "the reverse sweep of a dynamic loop reads the tape's last entry in every iteration "
        "instead of the iteration's own (a stale tape value)",
        "codegen.Emitter.reverse_loop (tape reads)",
        probe="cases/warp-running-product.yaml::reverse")
def _stale_tape(patch: Patch):
    _, codegen, _ = _engine()
    original = codegen.Emitter.reverse_loop

    def reverse_loop(self, s):
        start = len(self.lines)
        original(self, s)
        self.lines[start:] = [_TAPE_READ.sub(lambda m: f"{m[1]}[min(_n{m[2]}, {self.tape_size}) - 1]", line)
                              for line in self.lines[start:]]

    patch.set(codegen.Emitter, "reverse_loop", reverse_loop)


# --- beyond the ten

@mutant("keep-overwritten-cotangent",
        "a store does not consume the overwritten element's cotangent (no `dA[i] = 0` after "
        "propagating it): in-place updates count the old value's adjoint twice",
        "codegen.Emitter.reverse (Store statements)",
        probe="cases/warp-square-in-place.yaml::reverse")
def _keep_overwritten(patch: Patch):
    from .engine.ir import Store
    _per_statement_reverse(patch, lambda em, s: isinstance(s, Store) and s.array in em.diff_arrays,
                           lambda lines, em: [line for line in lines if not line.rstrip().endswith("] = 0")])


@mutant("shuffle-same-direction",
        "the adjoint of a warp shuffle shuffles the same way as the primal (down stays down) "
        "instead of the other way",
        "codegen.Emitter.reverse (shuffle assignments)",
        probe="cases/warp-shuffle-sum.yaml::reverse-float64")
def _shuffle_same_direction(patch: Patch):
    from .engine.analysis import SHUFFLES
    from .engine.ir import Assign, Prim
    swap = {"shfl_up_sync": "shfl_down_sync", "shfl_down_sync": "shfl_up_sync"}

    def select(em, s):
        return isinstance(s, Assign) and isinstance(s.expr, Prim) and s.expr.op in SHUFFLES

    def rewrite(lines, em):
        return [re.sub(r"shfl_(up|down)_sync", lambda m: swap[m[0]], line) for line in lines]

    _per_statement_reverse(patch, select, rewrite)


@mutant("drop-atomic-gather",
        "the adjoint of an atomic add in the primal is dropped (no gather of the target's "
        "cotangent into the added value)",
        "codegen.Emitter.reverse (Atomic statements)",
        probe="cases/cudajl-2455-sum-broadcast.yaml::reverse-float64")
def _drop_atomic_gather(patch: Patch):
    from .engine.ir import Atomic
    _per_statement_reverse(patch, lambda em, s: isinstance(s, Atomic), lambda lines, em: [])


@mutant("untaped-write-after-read",
        "reads of an array the kernel also writes are not taped inside dynamic loops: the reverse "
        "sweep re-reads memory that holds the final values (Warp issue 947, Taichi 8356)",
        "analysis.mark_taped_loads (and every module that imported it)",
        probe="cases/taichi-8356-accumulate.yaml::reverse")
def _untaped_write_after_read(patch: Patch):
    analysis, _, _ = _engine()
    patch.rebind(analysis, "mark_taped_loads", lambda ir: None)
