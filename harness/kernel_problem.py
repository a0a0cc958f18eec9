"""Adapt one kernel launch to the oracles' DiffProblem protocol.

Every evaluation starts from fresh device copies of the host inputs, so no probe can see another's
writes (snapshot and restore of every input around every probe). The adapter is pure: it keeps no
state between calls. A derivative launch returns a `DerivativeLaunch` (every lane's result, the
primal arrays the launch left, the engine's LaunchResult); whoever needs more than J v or J^T w
(the gradient strategy's primal-state and batch-lane checks, the activity relations) reads it there,
through `harness/launch_log.py`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .activity import Active, BatchDuplicated, Const, Duplicated, DuplicatedNoNeed
from .engine.launch import Engine, LaunchConfig
from .inputs import HostArg, laid_out
from .layouts import Buffer, check_aliasing, check_layout, copy_with_layout, device_view, filled_like
from .oracles.problem import StateVar
from .precision import casts_to_float32

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


class KernelProblem:
    """F: initial differentiable state -> final differentiable state, for one launch."""

    def __init__(self, engine: Engine, kernel, config: LaunchConfig, args: list[HostArg]):
        self.engine, self.kernel, self.config, self.args = engine, kernel, config, args
        self.backend = engine.backend
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
        # float64 arguments, float32 arithmetic inside (casts): the float64 evaluation of FD still
        # rounds to float32, so steps and tolerances follow float32 (issue 10 item 6).
        self.fd_precision = "float64"                      # primal64 recasts float32 arguments to float64
        if self.dtype == "float64" and casts_to_float32(kernel):
            self.dtype = self.fd_precision = "float32"
        self.width = max([a.spec.width or 1 for a in args if a.spec.activity == "batch_duplicated"] + [1])
        self._check_memory()

    def _check_memory(self):
        """Layouts and aliasing (harness/layouts.py): a differentiable array must not overlap
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
    def _device_values(self, overrides: dict | None = None, as_float64: bool = False) -> list:
        values = []
        roots: dict = {}                # one device copy per host allocation: layouts and aliases survive
        for a in self.args:
            v = a.value
            wide = as_float64 and a.spec.kind in ("array", "scalar") and _float(v.dtype)
            if a.spec.kind == "array":
                host = v
                if overrides and a.spec.name in overrides:
                    # an FD probe s + h v is built in float64 before anything is rounded
                    template = copy_with_layout(v, np.float64) if wide else v
                    host = filled_like(template, np.asarray(overrides[a.spec.name], dtype=template.dtype))
                # as_float64: the float64 reference of FD, in the same layout
                v = device_view(self.backend, host, roots, np.float64 if wide else None)
            elif a.spec.kind == "scalar":
                if overrides and a.spec.name in overrides:
                    v = (np.float64 if wide else np.dtype(v.dtype).type)(float(overrides[a.spec.name]))
                elif wide:
                    v = np.float64(v)
            values.append(v)
        return values

    def _finals(self, values) -> dict:
        return {a.spec.name: self.backend.to_host(v).astype(np.float64)
                for a, v in zip(self.args, values) if a.spec.activity != "const" and a.spec.kind == "array"}

    def _annotate(self, values, shadows: dict, mode: str) -> list:
        """Wrap every value in its activity; shadows[name] is a list of per-lane host values."""
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
                layout = (a.spec.shadow or {}).get("layout")   # the shadows' own layout, else the primal's
                host = [laid_out(np.broadcast_to(np.asarray(s, dtype=a.value.dtype), a.value.shape), layout) if layout else
                        filled_like(a.value, np.asarray(s).astype(a.value.dtype)) for s in shadows[name]]
                dev = [device_view(self.backend, h) for h in host]
                out.append(BatchDuplicated(v, tuple(dev)) if act == "batch_duplicated" else _WRAP[act](v, dev[0]))
        return out

    def _lanes(self, vec: dict, names, lane_seeds: list[dict] | None = None) -> dict:
        """Lane j gets (j + 1) times the direction, so lanes must come out scaled the same way;
        `lane_seeds` gives each lane its own direction instead (the rel-batch relation)."""
        if lane_seeds is not None:
            if len(lane_seeds) != self.width:
                raise ValueError(f"{len(lane_seeds)} lane seeds for a batch of width {self.width}")
            return {n: [np.asarray(seed.get(n, 0.0), dtype=np.float64) for seed in lane_seeds] for n in names}
        return {n: [np.asarray(vec.get(n, 0.0), dtype=np.float64) * (j + 1) for j in range(self.width)]
                for n in names}

    def annotated(self, mode: str, values=None) -> list:
        """The launch arguments of a derivative launch with zero shadows (for compile-only use)."""
        values = values if values is not None else self._device_values()
        return self._annotate(values, self._lanes({}, [v.name for v in self.inputs]), mode)

    # ------------------------------------------------------------------ protocol
    def base_point(self) -> dict:
        out = {}
        for a in self.args:
            if a.spec.activity == "const":
                continue
            out[a.spec.name] = np.array(a.value, dtype=np.float64)
        return out

    def primal64(self, state: dict) -> dict:
        return self._primal(state, as_float64=True)

    def primal_native(self, state: dict) -> dict:
        return self._primal(state, as_float64=False)

    def _primal(self, state: dict, as_float64: bool) -> dict:
        values = self._device_values(state, as_float64=as_float64)
        self.engine.launch(self.kernel, self.config, *values, mode="primal")
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
        given = {k: np.array(v, dtype=np.float64, copy=True) for k, v in seed.items()}
        values = self._device_values()
        names = [v.name for v in self.inputs]
        args = self._annotate(values, self._lanes(seed, names, lane_seeds), mode)
        result = self.engine.launch(self.kernel, self.config, *args, mode=mode)
        lanes = [{} for _ in range(self.width)]
        for a, ann in zip(self.args, args):
            if a.spec.activity == "const":
                continue
            name = a.spec.name
            if a.spec.kind == "array":
                shadows = ann.shadows if isinstance(ann, BatchDuplicated) else (ann.shadow,)
                for j, s in enumerate(shadows):
                    lanes[j][name] = self.backend.to_host(s).astype(np.float64)
            elif mode == "reverse":
                adj = result.adjoints[name]
                adj = adj if isinstance(adj, tuple) else (adj,)
                for j in range(self.width):
                    lanes[j][name] = np.float64(adj[j])
        return DerivativeLaunch(mode, given, lanes, self._finals(values), result)

    def with_launch(self, config=None, kernel=None, args: list[HostArg] | None = None) -> "KernelProblem":
        """The same problem with another launch configuration, kernel or arguments (a new adapter)."""
        return KernelProblem(self.engine, kernel if kernel is not None else self.kernel,
                             config if config is not None else self.config,
                             args if args is not None else self.args)
