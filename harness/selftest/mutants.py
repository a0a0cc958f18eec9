"""Planted AD bugs for the mutation self-test.

Each `Mutant` plants one classic automatic-differentiation bug in the engine by replacing one entry
of the engine's seams (harness/engine/seams.py: the derivative rules, the adjoint emitter of a
statement kind or a shared emitting step, an analysis, an option default). Nothing is patched:
the mutant's seams go to a Runner, whose engines are built with them. Use:

    from harness.selftest.mutants import MUTANTS, get_mutant
    outcome = Runner(root, "sim", seams=get_mutant("flip-sin-rule").seams()).execute(run)

Generated sources are content-hashed files, so a mutated code generator writes different files and
never reuses an unmutated module (harness.engine.runtime.cache).

Races (a dropped atomic, a dropped barrier, a lost Active reduction) need simulated threads that
actually interleave: numba's simulator runs a block's threads as Python threads that the GIL
switches only every 5 ms, so a non-atomic `+=` almost never loses an update there. Run such
mutants under `interleaved_threads()` (harness/selftest/campaign.py does so for every run on the
simulator, baseline included) to get a GPU's interleavings.

The campaign (every case under every mutant, one subprocess each) is harness/selftest/campaign.py and
`harness mutate`; docs/mutations.md has the last measured table.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

# One switch of the GIL every microsecond: the simulator's threads interleave inside statements.
INTERLEAVED_SWITCH_INTERVAL = 1e-6

_MISSING = object()


# ----------------------------------------------------------------------------- patching

class Patch:
    """Set attributes until `restore()`, which undoes them all in reverse. Only for the simulator
    (interleaved_threads); mutants never patch."""

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
    patch_point: str                  # the seam entry it replaces
    plant: Callable[[Any], Any] = dataclasses.field(repr=False)   # Seams -> mutated Seams
    probe: str = ""                   # the run id of a small case that catches it (tests/suite/test_mutations.py)
    race: bool = False                # only interleaved threads show it (see interleaved_threads)
    changes_source: bool = True       # the probe's generated kernel differs from the unmutated one

    def seams(self, base=None):
        """The engine's seams with this bug planted (into `base`, default_seams() when None)."""
        from harness.engine.seams import default_seams
        return self.plant(base if base is not None else default_seams())


MUTANTS: list[Mutant] = []        # process-wide: the catalogue, declared at import below


def mutant(name: str, plants: str, patch_point: str, probe: str, **kw):
    def register(plant: Callable[[Any], Any]):
        if any(m.name == name for m in MUTANTS):
            raise ValueError(f"mutant '{name}' registered twice")
        MUTANTS.append(Mutant(name, plants, patch_point, plant, probe, **kw))
        return plant
    return register


def get_mutant(name: str) -> Mutant:
    for m in MUTANTS:
        if m.name == name:
            return m
    raise KeyError(f"no mutant '{name}' (known: {', '.join(m.name for m in MUTANTS)})")


def _nothing(*args, **kw) -> None:
    """An emitter that emits nothing."""


# ----------------------------------------------------------------------------- the mutants

@mutant("drop-atomic",
        "every array's adjoint is claimed thread-owned: reads shared by threads get a plain `+=` "
        "instead of `cuda.atomic.add` (lost updates)",
        "seams.owned_arrays",
        probe="cases/contended-adjoint.yaml::reverse", race=True)
def _drop_atomic(seams):
    original = seams.owned_arrays

    def owned_arrays(ir, launch):
        arrays = {p.name for p in list(ir.params) + list(ir.local_arrays) if p.kind != "scalar"}
        return set(original(ir, launch)) | arrays

    return seams.replace(owned_arrays=owned_arrays)


@mutant("flip-sin-rule",
        "the derivative rule of sin has the wrong sign: d sin(x) = -cos(x)",
        "seams.rules['sin']",
        probe="cases/math-heavy.yaml::reverse-float64")
def _flip_sin(seams):
    return seams.replace(rules={"sin": ("-cos(x)",)})


@mutant("assign-not-accumulate",
        "the adjoint of a primitive's operand is assigned (`dx = dr * p`) instead of accumulated "
        "(`dx += dr * p`): a value used twice keeps only its last use's adjoint",
        "seams.emitters['assign'] (primitive assignments)",
        probe="cases/polynomial.yaml::reverse-float64")
def _assign_not_accumulate(seams):
    return seams.replace(emitters={"assign": functools.partial(seams.emitters["assign"], update="=")})


@mutant("skip-loop-replay",
        "the reverse sweep of a dynamic loop restores the taped registers but does not replay the "
        "loop body: every iteration's adjoint sees the last iteration's intermediate values "
        "(Warp's unreplayed dynamic loops)",
        "seams.emitters['replay-iteration']",
        probe="cases/loop-break.yaml::reverse")
def _skip_loop_replay(seams):
    return seams.replace(emitters={"replay-iteration": _nothing})


@mutant("drop-reverse-barrier",
        "`cuda.syncthreads()` is not mirrored in the reverse sweep: threads read shared-memory "
        "adjoints before their neighbours have written them",
        "seams.emitters['barrier']",
        probe="cases/shared-neighbour.yaml::reverse", race=True)
def _drop_reverse_barrier(seams):
    return seams.replace(emitters={"barrier": _nothing})


@mutant("clear-shadow",
        "a load's adjoint overwrites the array's shadow (`dx[i] = v`) instead of accumulating into "
        "it: the incoming cotangent of an array the kernel only reads is cleared",
        "seams.emitters['accumulate']",
        probe="cases/warp-947-write-after-read.yaml::reverse-float64")
def _clear_shadow(seams):
    from harness.engine.emission.syntax import index_text

    def accumulate(em, array, lane, index, value):
        em.line(f"{em.d(array, lane)}[{index_text(index)}] = {value}")

    return seams.replace(emitters={"accumulate": accumulate})


@mutant("nested-host-config",
        "device-side autodiff's child compile jobs are built for the host target instead of "
        "inheriting the kernel's (Enzyme.jl 2395)",
        "seams.option_defaults (nested_config=native)",
        probe="cases/enzyme-jl-2395-nested-reverse.yaml::primal-float32", changes_source=False)
def _nested_host_config(seams):
    return seams.replace(option_defaults={**seams.option_defaults, "nested_config": "native"})


@mutant("no-fold-constants",
        "the broadcast front end stops folding types and functions into the kernel by default: "
        "a folded constant is passed as a kernel argument (the reverted GPUArrays.jl PR 539)",
        "seams.option_defaults (fold_constants=False)",
        probe="cases/gpuarrays-539-revert-type.yaml::primal-float64", changes_source=False)
def _no_fold_constants(seams):
    return seams.replace(option_defaults={**seams.option_defaults, "fold_constants": False})


@mutant("lose-active-reduction",
        "an Active scalar's per-thread adjoints are stored (`active_out[k] = d_a`) instead of "
        "atomically summed over all threads: every thread but the last is lost",
        "seams.emitters['block-sum'] (Active scalars' sums)",
        probe="cases/axpy.yaml::reverse-float64")
def _lose_active_reduction(seams):
    original = seams.emitters["block-sum"]

    def block_sum(em, target, index, value):
        if target.endswith("active_out"):
            return f"{target}[{index}] = {value}"
        return original(em, target, index, value)

    return seams.replace(emitters={"block-sum": block_sum})


@mutant("stale-tape",
        "the reverse sweep of a dynamic loop reads the tape's last entry in every iteration "
        "instead of the iteration's own (a stale tape value)",
        "seams.emitters['tape-index']",
        probe="cases/warp-running-product.yaml::reverse")
def _stale_tape(seams):
    return seams.replace(emitters={"tape-index": lambda em, s: f"min(_n{s.id}, {em.options.tape_size}) - 1"})


# --- beyond the ten

@mutant("keep-overwritten-cotangent",
        "a store does not consume the overwritten element's cotangent (no `dA[i] = 0` after "
        "propagating it): in-place updates count the old value's adjoint twice",
        "seams.emitters['store']",
        probe="cases/warp-square-in-place.yaml::reverse")
def _keep_overwritten(seams):
    return seams.replace(emitters={"store": functools.partial(seams.emitters["store"], consume=False)})


@mutant("fold-past-aliasing",
        "a store's zeroing of a shadow element is folded into a later add at the same index even "
        "when an access between may touch the same element (every pair of accesses claimed apart): "
        "that access's adjoint is lost",
        "seams.apart_in_thread",
        probe="cases/inplace-shadows.yaml::shared-two-spellings-reverse-float64")
def _fold_past_aliasing(seams):
    from harness.engine.ir.ssa import Assign, Load, Store, walk

    def apart_in_thread(ir, array):
        ids = [id(s) for s in walk(ir.body) if (isinstance(s, Store) and s.array == array)
               or (isinstance(s, Assign) and isinstance(s.expr, Load) and s.expr.array == array)]
        return frozenset(frozenset((x, y)) for x in ids for y in ids if x != y)

    return seams.replace(apart_in_thread=apart_in_thread)


@mutant("shuffle-same-direction",
        "the adjoint of a warp shuffle shuffles the same way as the primal (down stays down) "
        "instead of the other way",
        "seams.emitters['shuffle']",
        probe="cases/warp-shuffle-sum.yaml::reverse-float64")
def _shuffle_same_direction(seams):
    same = {"shfl_down": "shfl_down_sync", "shfl_up": "shfl_up_sync"}
    return seams.replace(emitters={"shuffle": functools.partial(seams.emitters["shuffle"], opposite=same)})


@mutant("drop-atomic-gather",
        "the adjoint of an atomic add in the primal is dropped (no gather of the target's "
        "cotangent into the added value)",
        "seams.emitters['atomic']",
        probe="cases/cudajl-2455-sum-broadcast.yaml::reverse-float64")
def _drop_atomic_gather(seams):
    return seams.replace(emitters={"atomic": _nothing})


@mutant("drop-loop-jacobian",
        "a dynamic loop reversed through its Jacobian passes its results' adjoints to its live-ins "
        "without multiplying by the Jacobian (adj(in_j) += sum_i adj(out_i))",
        "seams.emitters['loop-jacobian']",
        probe="cases/loop-jacobian-horner.yaml::reverse-float64")
def _drop_loop_jacobian(seams):
    return seams.replace(emitters={"loop-jacobian": functools.partial(seams.emitters["loop-jacobian"],
                                                                      through_jacobian=False)})


@mutant("untaped-write-after-read",
        "reads of an array the kernel also writes are not taped inside dynamic loops: the reverse "
        "sweep re-reads memory that holds the final values (Warp issue 947, Taichi 8356)",
        "seams.mark_taped_loads",
        probe="cases/taichi-8356-accumulate.yaml::reverse")
def _untaped_write_after_read(seams):
    return seams.replace(mark_taped_loads=lambda ir: None)


# --- the self-test's former blind spots

@mutant("loop-index-unit-step",
        "the reverse sweep rebuilds a counted loop's variable as start + r, forgetting the step "
        "(right only for step 1), where it restores taped registers and where it recomputes",
        "seams.emitters['loop-index']",
        probe="cases/loop-offset-stride.yaml::taped-reverse")
def _loop_index_unit_step(seams):
    from harness.engine.emission.syntax import atom
    return seams.replace(emitters={"loop-index": lambda em, s, iteration: f"{atom(s.start)} + {iteration}"})


@mutant("loop-index-zero-start",
        "the reverse sweep rebuilds a counted loop's variable as r * step, as if every loop "
        "started at 0, where it restores taped registers and where it recomputes",
        "seams.emitters['loop-index']",
        probe="cases/loop-offset-stride.yaml::reverse")
def _loop_index_zero_start(seams):
    return seams.replace(emitters={"loop-index": lambda em, s, iteration: f"{iteration} * {s.step}"})


def _scalars_by_type(key):
    """A launch description with every number replaced by its type alone."""
    if isinstance(key, tuple):
        if len(key) == 2 and isinstance(key[0], type) and isinstance(key[1], (bool, int, float, np.generic)):
            return (key[0],)
        return tuple(_scalars_by_type(k) for k in key)
    return key


@mutant("launch-cache-ignores-scalars",
        "Engine.launch's call-site cache describes a scalar argument by its type, not its value: "
        "a repeated launch with a new scalar runs the launch packed with the old one",
        "seams.launch_fingerprint",
        probe="cases/program-rescale-twice.yaml::primal-float64", changes_source=False)
def _launch_cache_ignores_scalars(seams):
    original = seams.launch_fingerprint

    def fingerprint(args):
        described = original(args)
        return None if described is None else _scalars_by_type(described)

    return seams.replace(launch_fingerprint=fingerprint)


@mutant("alias-check-shadows-only",
        "the engine's aliasing refusal checks shadows against everything but never two primals: "
        "two Duplicated arguments on one buffer (one memory cell, two shadows) are differentiated "
        "as independent arrays",
        "seams.check_arguments",
        probe="cases/alias-nested-autodiff.yaml::two-shadows-primal", changes_source=False)
def _alias_check_shadows_only(seams):
    original = seams.check_arguments

    def check_arguments(buffers):
        shadows = [b for b in buffers if b.role != "primal"]
        for b in buffers:
            if b.role == "primal":
                original([b] + shadows)

    return seams.replace(check_arguments=check_arguments)


@mutant("any-uniform-grid-step",
        "the grid-stride recognition accepts any uniform step, not only the grid's thread count: "
        "a block-stride loop's elements are claimed thread-owned (plain `+=` adjoints, no "
        "cross-thread write-after-read refusal)",
        "seams.owned_arrays (grid_step)",
        probe="cases/grid-stride-loop.yaml::block-stride-reverse", changes_source=False)
def _any_uniform_grid_step(seams):
    from harness.engine.analyses.ownership import THREAD_SYMBOLS
    uniform = lambda step: not any(k in THREAD_SYMBOLS for k in step)   # noqa: E731
    return seams.replace(owned_arrays=functools.partial(seams.owned_arrays, grid_step=uniform))


@mutant("launch-branches-any-condition",
        "ownership judges the two branches of every `if` apart, as if the condition were the same "
        "across the launch, also when it depends on the thread: a ping-pong chosen by the thread's "
        "parity is claimed thread-owned (plain `+=` adjoints, no cross-thread write-after-read refusal)",
        "seams.owned_arrays (every_if)",
        probe="cases/ownership-launch-branches.yaml::thread-parity-reverse", changes_source=False)
def _launch_branches_any_condition(seams):
    return seams.replace(owned_arrays=functools.partial(seams.owned_arrays, every_if=True))


@mutant("prefetch-ignores-outside",
        "a block's thread-owned shadow reads are issued early (in the forward sweep) even when a "
        "statement outside the block touches the array: the read misses what the reverse of a "
        "later block wrote into the shadow",
        "seams.emitters['hoist-prefetch']",
        probe="cases/prefetch-outside-block.yaml::reverse")
def _prefetch_ignores_outside(seams):
    return seams.replace(emitters={"hoist-prefetch": functools.partial(seams.emitters["hoist-prefetch"],
                                                                       outside_blocks=False)})


@mutant("coarsen-physical-gridsize",
        "a block-coarsened reverse kernel reads cuda.gridsize as the physical (capped) grid's "
        "thread count instead of the real launch's: a grid-stride loop in a virtual block visits "
        "other threads' elements",
        "seams.emitters['virtual-index']",
        probe="cases/coarsened-reverse.yaml::grid-stride-gridsize-reverse")
def _coarsen_physical_gridsize(seams):
    original = seams.emitters["virtual-index"]

    def virtual_index(e):
        kind, _, axis = e.name.partition(".")
        if kind == "gsize":
            a = "xyz"[int(axis)]
            return f"cuda.gridDim.{a} * cuda.blockDim.{a}"
        return original(e)

    return seams.replace(emitters={"virtual-index": virtual_index})


@mutant("drop-tangent-atomic",
        "forward mode's tangent of an atomic add is a plain `+=` on the shadow: threads that add "
        "to one element at once lose tangent updates",
        "seams.emitters['tangent-atomic']",
        probe="cases/contended-adjoint.yaml::forward-atomic-forward", race=True)
def _drop_tangent_atomic(seams):
    from harness.engine.emission.emit_parallel import atomic_index

    def tangent_atomic(em, s):
        for j in em.lanes():
            em.line(f"{em.d(s.array, j)}[{atomic_index(em, s.index)}] += {em.d(s.value, j)}")

    return seams.replace(emitters={"tangent-atomic": tangent_atomic})


@mutant("float32-active-sum",
        "an Active scalar's per-block sums are added into its adjoint rounded to float32 (a float32 "
        "accumulation): every block's contribution loses the bits below float32's precision",
        "seams.emitters['block-sum'] (Active scalars' sums)",
        probe="cases/axpy.yaml::reverse-float64")
def _float32_active_sum(seams):
    original = seams.emitters["block-sum"]

    def block_sum(em, target, index, value):
        if target.endswith("active_out"):
            return original(em, target, index, f"float32({value})")
        return original(em, target, index, value)

    return seams.replace(emitters={"block-sum": block_sum})


@mutant("fold-batch-lanes",
        "a batched reverse sweep adds every lane's adjoint into lane 0's shadow (the shadow's lane "
        "index is dropped): one-lane launches are unchanged, a batch's lanes are folded together",
        "seams.emitters['accumulate']",
        # the probe's own one-lane kernel is unchanged: the bug is in its batched variant's kernel
        probe="cases/axpy.yaml::reverse-float64", changes_source=False)
def _fold_batch_lanes(seams):
    original = seams.emitters["accumulate"]

    def accumulate(em, array, lane, index, value):
        return original(em, array, 0, index, value)

    return seams.replace(emitters={"accumulate": accumulate})


@mutant("stale-log-position",
        "the reverse sweep of a loop around nested loops restores the value log's position of its "
        "last iteration in every iteration: the inner loops' replays read other iterations' atomic "
        "tickets and overwritten elements",
        "seams.emitters['log-position']",
        probe="cases/loop-nested-logged.yaml::three-deep-reverse-float64")
def _stale_log_position(seams):
    return seams.replace(emitters={"log-position": lambda em, s, r: f"_tape_lc{s.id}[min(_n{s.id}, {em.options.tape_size}) - 1]"})


@mutant("stale-extremum-count",
        "the reverse sweep of a loop around atomic max/min restores the thread's max/min count of its last "
        "iteration in every iteration: the replays name other executions, so the cotangent goes to no "
        "winner or to the wrong one",
        "seams.emitters['extremum-count']",
        probe="cases/atomic-extrema-statements.yaml::grid-stride-reverse-float64")
def _stale_extremum_count(seams):
    return seams.replace(emitters={"extremum-count": lambda em, s, r: f"_tape_xn{s.id}[min(_n{s.id}, {em.options.tape_size}) - 1]"})
