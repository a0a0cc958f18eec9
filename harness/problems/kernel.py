"""Adapt one kernel launch to the oracles' DiffProblem protocol.

Every evaluation starts from fresh device copies of the host inputs, so no probe can see another's
writes (snapshot and restore of every input around every probe). The adapter is pure: besides one
upload of each host input (kept untouched, copied on the device for every launch) it keeps no
state between calls.

States, directions and results are arrays of one module (`xp`), decided per problem: on a device
backend (cupy on cuda) a problem larger than policy.HOST_STATE_LIMIT elements keeps them on the
device, so the oracles and relations compute where the arrays are and nothing of the size of the
state crosses to the host (seeds given as numpy arrays are uploaded); a smaller one
(`on_host`) keeps them in numpy and stages each launch (harness/problems/host_staging.py), so its hundreds of
tiny oracle operations cost microseconds instead of a device launch each. sim and ptx are numpy. A derivative launch returns a `DerivativeLaunch` (every lane's result, the
primal arrays the launch left, the engine's LaunchResult); whoever needs more than J v or J^T w
(the gradient strategy's primal-state and batch-lane checks, the activity relations) reads it there,
through `harness/problems/launch_log.py`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.core.activity import Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed
from harness.engine.runtime.launch import Engine, LaunchConfig
from harness.problems.host_staging import HOST, keeps_on_host, staged_launch
from harness.cases.inputs import HostArg, laid_out
from harness.problems.layouts import Buffer, check_aliasing, check_layout, device_view, element_layout, root_of
from harness.oracles.arrays import f64, xp_of
from harness.oracles.problem import StateVar
from harness.problems.precision import run_precisions

_WRAP = {"duplicated": Duplicated, "duplicated_no_need": DuplicatedNoNeed}


@dataclass(frozen=True)
class DerivativeLaunch:
    """One derivative launch, as values: what the gradient strategy and the relations read."""
    mode: str                        # forward | reverse
    given: dict                      # the tangent (forward) or cotangent (reverse), lane 0
    lanes: list[dict]                # per batch lane: J v_j (forward) or J^T w_j (reverse)
    primal_finals: dict | None       # the differentiable arrays' primal values after the launch
    launch: Any                      # the engine's LaunchResult (compile jobs, generated source)

    @property
    def result(self) -> dict:
        """Lane 0: J v or J^T w, keyed by argument name."""
        return self.lanes[0]


def _float(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.floating)


def array_module(backend):
    """The module of the arrays `backend` hands out (numpy, cupy, or a test's fake device)."""
    return xp_of(backend.zeros((1,), np.float64))


def _host_arrays(args: list[HostArg]) -> list:
    return [a.value for a in args if a.spec.kind == "array"]


class KernelProblem:
    """F: initial differentiable state -> final differentiable state, for one launch."""
    writes_seeds = False      # shadows are built from a seed, never the seed itself: no copy needed
    fresh_results = True      # every call returns arrays of its own launch, held by no one else

    def __init__(self, engine: Engine, kernel, config: LaunchConfig, args: list[HostArg],
                 uploads: dict | None = None, on_host: bool | None = None):
        """`uploads`: another adapter's uploads of the same host arrays, to share (with_launch).
        `on_host`: keep states on the host and stage launches (None: decided by the arrays' size;
        a variant follows its parent, so their results are arrays of one module)."""
        self.engine, self.kernel, self.config, self.args = engine, kernel, config, args
        self.backend = engine.backend
        device_xp = array_module(self.backend)
        self.on_host = keeps_on_host(device_xp, _host_arrays(args)) if on_host is None else on_host
        self.xp = np if self.on_host else device_xp
        # where device_view puts an argument's copies: numpy twins on the host, else the device
        self._arrays = HOST if self.on_host else self.backend
        self.inputs = []
        self.outputs = []
        for a in args:
            act = a.spec.activity
            if act == "const":
                continue
            if a.spec.kind == "array":
                shape = tuple(a.value.shape)
                self.inputs.append(StateVar(a.spec.name, shape))
                self.outputs.append(StateVar(a.spec.name, shape))
            else:
                self.inputs.append(StateVar(a.spec.name, ()))
        floats = [np.dtype(a.value.dtype).name for a in args
                  if a.spec.kind in ("array", "scalar") and _float(a.value.dtype)]
        self.dtype = "float32" if floats and all(f == "float32" for f in floats) else "float64"
        # float32 arithmetic inside (casts, float32 temporaries), with arguments of either dtype: the
        # float64 evaluation of FD still rounds to float32.
        self.dtype, self.fd_precision = run_precisions(self.dtype, [kernel])
        self.width = max([a.spec.width or 1 for a in args if a.spec.activity == "batch_duplicated"] + [1])
        self._check_memory()
        self._pristine = self._upload(uploads if uploads is not None else {})

    def _upload(self, pristine: dict) -> dict:
        """Each host allocation on the device once, in its own dtype, in layouts.device_view's
        `roots` form. Never launched on: every launch works on device copies of these
        (`_fresh_roots`), widened to float64 on the device where finite differences need it."""
        for a in self.args:
            if a.spec.kind == "array" and element_layout(a.value) is not None:
                device_view(self._arrays, a.value, pristine, a.value.dtype)
        return pristine

    def _check_memory(self):
        """Layouts and aliasing (harness/problems/layouts.py): a differentiable array must not overlap
        itself, and arguments (or a `shadow: {alias: ...}`) may share memory only when const."""
        buffers, by_name = [], {a.spec.name: a for a in self.args}
        for pos, a in enumerate(self.args):
            if a.spec.kind != "array":
                continue
            check_layout(pos, a.spec.name, a.value, a.spec.activity)
            buffers.append(Buffer(pos, a.spec.name, "primal", a.value, a.spec.activity != "const"))
            target = (a.spec.shadow or {}).get("alias")
            if target is not None and target in by_name:
                buffers.append(Buffer(pos, a.spec.name, "shadow", by_name[target].value, True))
        check_aliasing(buffers)

    # ------------------------------------------------------------------ helpers
    def _fresh_roots(self, wanted) -> dict:
        """Device roots (layouts.device_view's `roots`) for one launch: for each (host array, dtype)
        in `wanted`, a device copy of the pristine upload of its allocation, one per allocation, so
        arguments sharing memory on the host share it on the device, and no launch sees another's
        writes. The host data crosses to the device once (`_upload`)."""
        fresh: dict = {}
        for host, dtype in wanted:
            if element_layout(host) is None:           # device_view uploads such a view itself
                continue
            dtype = np.dtype(dtype)
            root, shared = root_of(host), fresh.setdefault(dtype.str, [])
            if not any(r is root for r, _ in shared):
                flat = next(f for r, f in self._pristine[np.dtype(host.dtype).str] if r is root)
                shared.append((root, flat.copy() if dtype == flat.dtype else flat.astype(dtype)))
        return fresh

    def fresh_values(self) -> list:
        """The launch's arguments at the base point, arrays as fresh copies where the states live
        (from the pristine device copies: nothing crosses from the host again)."""
        return self._device_values()

    def _device_values(self, overrides: dict | None = None, as_float64: bool = False) -> list:
        def wide(a):
            return as_float64 and _float(a.value.dtype)
        arrays = [a for a in self.args if a.spec.kind == "array"]
        roots = self._fresh_roots([(a.value, np.float64 if wide(a) else a.value.dtype) for a in arrays])
        values = []
        for a in self.args:
            v = a.value
            if a.spec.kind == "array":
                # as_float64: the float64 reference of FD, in the same layout
                v = device_view(self._arrays, v, roots, np.float64 if wide(a) else None)
                if overrides and a.spec.name in overrides:
                    # an FD probe s + h v, written in float64 before anything is rounded; a
                    # differentiable array shares its allocation with no other argument (checked)
                    v[...] = f64(overrides[a.spec.name], self.xp).reshape(v.shape)
            elif a.spec.kind == "scalar":
                if overrides and a.spec.name in overrides:
                    dtype = np.float64 if wide(a) else np.dtype(v.dtype).type
                    v = dtype(float(overrides[a.spec.name]))
                elif wide(a):
                    v = np.float64(v)
            values.append(v)
        return values

    def _finals(self, values) -> dict:
        # the launch's own arrays, no one else's: float64 ones are handed over as they are
        return {a.spec.name: f64(v, self.xp)
                for a, v in zip(self.args, values) if a.spec.activity != "const" and a.spec.kind == "array"}

    def _shadow(self, a: HostArg, seed):
        """A device shadow of `a` holding `seed`: in the layout the case gives its shadows, else in
        its primal's (strides, offset, and the rest of the allocation as the primal's)."""
        layout = (a.spec.shadow or {}).get("layout")
        if layout:
            out = device_view(self._arrays, laid_out(np.zeros(a.value.shape, a.value.dtype), layout))
        else:
            out = device_view(self._arrays, a.value, self._fresh_roots([(a.value, a.value.dtype)]))
        out[...] = self.xp.broadcast_to(f64(seed, self.xp), a.value.shape)
        return out

    def _annotate(self, values, shadows: dict, mode: str) -> list:
        """Wrap every value in its activity; shadows[name] is a list of per-lane values (any module)."""
        out = []
        for a, v in zip(self.args, values):
            act = a.spec.activity
            name = a.spec.name
            if act == "const":
                out.append(Const(v))
            elif a.spec.kind == "scalar":
                lanes = [np.dtype(v.dtype).type(float(t)) for t in shadows[name]]
                tangent = tuple(lanes) if self.width > 1 else lanes[0]
                out.append(Active(v, tangent) if act == "active" or mode == "reverse" else Duplicated(v, tangent))
            else:
                dev = [self._shadow(a, s) for s in shadows[name]]
                out.append(BatchDuplicated(v, tuple(dev)) if act == "batch_duplicated" else _WRAP[act](v, dev[0]))
        return out

    def _lanes(self, vec: dict, names, lane_seeds: list[dict] | None = None) -> dict:
        """Lane j gets (j + 1) times the direction, so lanes must come out scaled the same way;
        `lane_seeds` gives each lane its own direction instead (the rel-batch relation)."""
        if lane_seeds is not None:
            if len(lane_seeds) != self.width:
                raise ValueError(f"{len(lane_seeds)} lane seeds for a batch of width {self.width}")
            return {n: [f64(seed.get(n, 0.0), self.xp) for seed in lane_seeds] for n in names}
        return {n: [f64(vec.get(n, 0.0), self.xp) * (j + 1) for j in range(self.width)] for n in names}

    def annotated(self, mode: str, values=None) -> list:
        """The launch arguments of a derivative launch with zero shadows (for compile-only use)."""
        values = values if values is not None else self._device_values()
        return self._annotate(values, self._lanes({}, [v.name for v in self.inputs]), mode)

    # ------------------------------------------------------------------ protocol
    def base_point(self) -> dict:
        return {a.spec.name: self._initial(a) for a in self.args if a.spec.activity != "const"}

    def _initial(self, a: HostArg):
        """An argument's initial value, float64, in the backend's module: a copy of its upload."""
        if a.spec.kind == "array":
            fresh = self._fresh_roots([(a.value, np.float64)])
            return device_view(self._arrays, a.value, fresh, np.float64).astype(self.xp.float64, copy=False)
        return self.xp.asarray(a.value, dtype=self.xp.float64)

    def primal64(self, state: dict) -> dict:
        return self._primal(state, as_float64=True)

    def primal_native(self, state: dict) -> dict:
        return self._primal(state, as_float64=False)

    def _primal(self, state: dict, as_float64: bool) -> dict:
        values = self._device_values(state, as_float64=as_float64)
        self._launch(values, "primal")
        return self._finals(values)

    def primal_finals(self) -> dict:
        """The differentiable arrays after a primal launch at the base point, in the kernel's own
        dtype (what a derivative launch must leave them as)."""
        return self._primal({}, as_float64=False)

    def jvp(self, tangent: dict) -> dict:
        return self.derivative("forward", tangent).result

    def vjp(self, cotangent: dict) -> dict:
        return self.derivative("reverse", cotangent).result

    def derivative(self, mode: str, seed: dict, lane_seeds: list[dict] | None = None) -> DerivativeLaunch:
        """One forward (seed: a tangent of the inputs) or reverse (seed: a cotangent of the outputs)
        launch at the base point, every lane's result returned as values."""
        if mode not in ("forward", "reverse"):
            raise ValueError(f"a derivative launch is forward or reverse, not {mode!r}")
        given = {k: f64(v, self.xp) for k, v in seed.items()}     # never written: shadows are built from it
        values = self._device_values()
        names = [v.name for v in self.inputs]
        args = self._annotate(values, self._lanes(seed, names, lane_seeds), mode)
        result = self._launch(args, mode)
        lanes = [{} for _ in range(self.width)]
        for a, ann in zip(self.args, args):
            if a.spec.activity == "const":
                continue
            name = a.spec.name
            if a.spec.kind == "array":
                shadows = ann.shadows if isinstance(ann, BatchDuplicated) else (ann.shadow,)
                for j, s in enumerate(shadows):
                    lanes[j][name] = s.astype(self.xp.float64)
            elif mode == "reverse":
                adj = result.adjoints[name]
                adj = adj if isinstance(adj, tuple) else (adj,)
                for j in range(self.width):
                    lanes[j][name] = self.xp.asarray(adj[j], dtype=self.xp.float64)   # beside device arrays
        return DerivativeLaunch(mode, given, lanes, self._finals(values), result)

    def _launch(self, args: list, mode: str):
        """One engine launch on `args` (annotated or bare): on the device arrays themselves, or,
        on_host, on device twins of the host arrays, whose final values come back into them."""
        if self.on_host:
            return staged_launch(self.engine, self.backend, self.kernel, self.config, args, mode)
        return self.engine.launch(self.kernel, self.config, *args, mode=mode)

    def with_launch(self, config=None, kernel=None, args: list[HostArg] | None = None) -> "KernelProblem":
        """The same problem with another launch configuration, kernel or arguments (a new adapter,
        on the same side of the host/device line as this one)."""
        return KernelProblem(self.engine, kernel if kernel is not None else self.kernel,
                             config if config is not None else self.config,
                             args if args is not None else self.args, uploads=self._pristine, on_host=self.on_host)
