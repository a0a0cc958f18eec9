"""A case's program: a sequence of launches over named buffers, adapted to the
oracles' DiffProblem protocol as ONE state transformer F: initial state -> final state.

    forward  (jvp)  every launch in order in forward mode; tangents live in shadows that persist
                    from launch to launch (intermediate buffers start with zero tangents)
    reverse  (vjp)  a primal sweep that records a tape (a host copy of a buffer before each launch
                    that may write it: harness/problems/program_access.py), then every launch in reverse
                    order in reverse mode, each on its own inputs restored from the tape, with the
                    cotangents flowing backwards through the persistent shadows; an Active scalar's
                    adjoint is the sum over the launches that take it
    primal64        the launches in order, every float buffer in float64 (finite differences)

The replay protocol (item 2, `replay:`) runs the primal sweep first on the buffers and the reverse
sweep later on the SAME buffers, as training code does, without the tape: only the buffers named
in `replay.restore` are reset to their initial values (what the user does, e.g. a counter zeroed
before the backward pass). The engine's reverse launch re-executes the primal from the buffers it
is given, so every buffer a launch reads must still hold its value from before that launch:
a launch that writes what it (or an earlier launch) reads is refused with the line that writes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.core.activity import Active, Const, Duplicated
from harness.engine.frontend.source import python_function
from harness.engine.runtime.launch import Engine, LaunchConfig
from harness.core.errors import UnsupportedError
from harness.cases.inputs import HostArg, init_array, load_kernel
from harness.model import LaunchStep, ProgramSpec
from harness.oracles.problem import StateVar
from harness.problems.precision import run_precisions
from harness.problems.program_access import array_access


def _float(dtype) -> bool:
    return np.issubdtype(np.dtype(dtype), np.floating)


def launch_config(spec) -> LaunchConfig:
    if spec.threads:
        return LaunchConfig.threads(spec.threads if len(spec.threads) > 1 else spec.threads[0],
                                    spec.block if spec.block else 128)
    return LaunchConfig.of(spec.grid, spec.block)


@dataclass
class _Launch:
    step: LaunchStep
    kernel: object
    config: LaunchConfig
    reads: frozenset                # buffer names
    writes: frozenset
    write_lines: dict
    buffer_of: dict                 # kernel parameter -> buffer name


class ProgramProblem:
    """F: the program's initial differentiable state -> its final one (see the module doc)."""

    def __init__(self, engine: Engine, program: ProgramSpec, args: list[HostArg], root: Path,
                 dtype: str | None = None, replay: dict | None = None, seed: int = 0):
        self.engine, self.backend, self.args, self.replay = engine, engine.backend, args, replay
        self.launches = []
        for step in program.launches():
            fn = load_kernel(step.kernel, root)
            access = array_access(fn)
            code = python_function(fn).__code__          # a @cuda.jit kernel's too
            params = code.co_varnames[:code.co_argcount]
            to_buffer = dict(zip(params, step.args))
            self.launches.append(_Launch(step, fn, launch_config(step.launch),
                                         frozenset(to_buffer[p] for p in access.reads),
                                         frozenset(to_buffer[p] for p in access.writes),
                                         {to_buffer[p]: (step.kernel.path, line) for p, line in access.lines.items()},
                                         to_buffer))
        rng = np.random.default_rng(seed)
        self.buffers = {}                                  # intermediate buffers: name -> (host zeros, activity)
        for b in program.buffers:
            spec = b.array
            if dtype and spec.dtype in ("float16", "float32", "float64"):
                spec = type(spec)(spec.shape, dtype, spec.init, spec.layout)
            self.buffers[b.name] = (init_array(spec, rng), b.activity)
        self.by_name = {a.spec.name: a for a in args}
        self.inputs, self.outputs = [], []
        for a in args:
            if a.spec.activity == "const":
                continue
            shape = tuple(np.shape(a.value)) if a.spec.kind == "array" else ()
            self.inputs.append(StateVar(a.spec.name, shape))
            if a.spec.kind == "array":
                self.outputs.append(StateVar(a.spec.name, shape))
        floats = [np.dtype(v.dtype).name for v in [a.value for a in args] + [h for h, _ in self.buffers.values()]
                  if hasattr(v, "dtype") and _float(v.dtype)]
        self.dtype = "float32" if floats and all(f == "float32" for f in floats) else "float64"
        self.dtype, self.fd_precision = run_precisions(self.dtype, [launch.kernel for launch in self.launches])
        self.width = 1
        self.last_launch = None
        self.tape_entries = 0                              # host copies the last reverse sweep recorded
        self.replay_error, self.replay_worst = 0.0, None   # replay: re-executed writes vs the primal's
        if replay is not None:
            self._check_replay()

    # ------------------------------------------------------------------ buffers
    def _activity(self, name: str) -> str:
        return self.by_name[name].spec.activity if name in self.by_name else self.buffers[name][1]

    def _is_array(self, name: str) -> bool:
        return name in self.buffers or self.by_name[name].spec.kind == "array"

    def _fresh(self, state: dict | None = None, as_float64: bool = False) -> dict:
        """Device copies of every buffer (state overrides for the case's differentiable ones)."""
        values = {}
        for a in self.args:
            v, name = a.value, a.spec.name
            wide = as_float64 and _float(np.dtype(getattr(v, "dtype", type(v))))
            if state is not None and name in state:
                v = np.asarray(state[name]).reshape(np.shape(v))
                v = v if wide else v.astype(a.value.dtype)
            if a.spec.kind == "array":
                values[name] = self.backend.asarray(np.array(v, dtype=np.float64 if wide else a.value.dtype))
            else:
                values[name] = np.float64(v) if wide else np.dtype(a.value.dtype).type(v)
        for name, (host, _) in self.buffers.items():
            wide = as_float64 and _float(host.dtype)
            values[name] = self.backend.asarray(np.array(host, dtype=np.float64 if wide else host.dtype))
        return values

    def _wrap(self, launch: _Launch, values: dict, shadows: dict, mode: str) -> list:
        out = []
        for name in launch.step.args:
            v, act = values[name], self._activity(name)
            if act == "const":
                out.append(Const(v))
            elif self._is_array(name):
                out.append(Duplicated(v, shadows[name]))
            else:                                          # a differentiable scalar
                tangent = np.dtype(v.dtype).type(shadows.get(name, 0.0) if mode == "forward" else 0.0)
                out.append(Active(v, tangent) if act == "active" or mode == "reverse" else Duplicated(v, tangent))
        return out

    def _shadows(self, seed: dict) -> dict:
        """Device shadows of every differentiable array buffer: the seed, zeros for intermediates."""
        shadows = {}
        for name in list(self.by_name) + list(self.buffers):
            if self._activity(name) == "const":
                continue
            if self._is_array(name):
                host = self.by_name[name].value if name in self.by_name else self.buffers[name][0]
                given = seed.get(name)
                init = np.zeros(host.shape) if given is None else np.asarray(given, dtype=np.float64).reshape(host.shape)
                shadows[name] = self.backend.asarray(init.astype(host.dtype))
            else:
                shadows[name] = float(seed.get(name, 0.0))
        return shadows

    def _finals(self, values: dict) -> dict:
        return {v.name: self.backend.to_host(values[v.name]).astype(np.float64) for v in self.outputs}

    def _primal(self, launch: _Launch, values: dict):
        self.last_launch = self.engine.launch(launch.kernel, launch.config,
                                              *[values[n] for n in launch.step.args], mode="primal")

    # ------------------------------------------------------------------ the replay protocol
    def _check_replay(self):
        """What a reverse launched after the primal, on the same buffers, can reproduce."""
        restored = set(self.replay.get("restore", ()))
        for i, launch in enumerate(self.launches):
            for later in self.launches[i:]:
                clobbered = (launch.reads & later.writes) - restored
                for name in sorted(clobbered):
                    path, line = later.write_lines.get(name, (later.step.kernel.path, None))
                    raise UnsupportedError(
                        f"replay protocol: '{name}' is written by {later.step.kernel.function} after "
                        f"{launch.step.kernel.function} reads it, so a reverse launched later re-executes "
                        f"{launch.step.kernel.function} on the written value; restore it before the reverse "
                        f"(replay: {{restore: [{name}]}}), or leave replay out (the program tape restores it)",
                        file=path, line=line)

    def _compare_replay(self, launch: _Launch, name: str, primal: np.ndarray, replayed: np.ndarray):
        """Under replay, the reverse launch re-executes the primal: a buffer it writes must come out
        as the primal left it, or the gradient belongs to another computation (e.g. atomics that
        handed out the slots in another order)."""
        scale = max(1.0, float(np.max(np.abs(primal.astype(np.float64)), initial=0.0)))
        err = float(np.max(np.abs(replayed.astype(np.float64) - primal.astype(np.float64)), initial=0.0)) / scale
        if err > self.replay_error:
            self.replay_error = err
            self.replay_worst = f"{name} (written by {launch.step.kernel.function})"

    # ------------------------------------------------------------------ protocol
    def base_point(self) -> dict:
        return {a.spec.name: np.array(a.value, dtype=np.float64) for a in self.args if a.spec.activity != "const"}

    def primal64(self, state: dict) -> dict:
        return self._final_state(state, as_float64=True)

    def primal_native(self, state: dict) -> dict:
        return self._final_state(state, as_float64=False)

    def _final_state(self, state: dict, as_float64: bool) -> dict:
        values = self._fresh(state, as_float64=as_float64)
        for launch in self.launches:
            self._primal(launch, values)
        return self._finals(values)

    def primal(self) -> dict:
        """One primal run at the case's own dtypes: every array buffer's final value."""
        values = self._fresh()
        for launch in self.launches:
            self._primal(launch, values)
        return {n: self.backend.to_host(v) for n, v in values.items() if self._is_array(n)}

    def jvp(self, tangent: dict) -> dict:
        values, shadows = self._fresh(), self._shadows(tangent)
        for launch in self.launches:
            self.last_launch = self.engine.launch(launch.kernel, launch.config,
                                                  *self._wrap(launch, values, shadows, "forward"), mode="forward")
        return {v.name: self.backend.to_host(shadows[v.name]).astype(np.float64) for v in self.outputs}

    def vjp(self, cotangent: dict) -> dict:
        values = self._fresh()
        initial = {n: self.backend.to_host(v).copy() for n, v in values.items() if self._is_array(n)}
        tape, version = {}, {n: 0 for n in initial}
        inputs_of = []
        for launch in self.launches:                        # the primal sweep, recording the tape
            used = {}
            for name in launch.step.args:
                if self._is_array(name):
                    key = (name, version[name])
                    if key not in tape and self.replay is None:
                        tape[key] = self.backend.to_host(values[name]).copy()
                    used[name] = key
            inputs_of.append(used)
            self._primal(launch, values)
            for name in launch.writes:
                version[name] += 1
        self.tape_entries = len(tape)
        last_writer = {name: i for i, launch in enumerate(self.launches) for name in launch.writes}
        after_primal = {name: self.backend.to_host(values[name]).copy() for name in last_writer}
        if self.replay is not None:                         # the user's reset before the backward pass
            for name in self.replay.get("restore", ()):
                values[name] = self.backend.asarray(initial[name])
        shadows, adjoints = self._shadows(cotangent), {}
        for index in reversed(range(len(self.launches))):
            launch, used = self.launches[index], inputs_of[index]
            if self.replay is None:                         # each launch on its own inputs, from the tape
                for name, key in used.items():
                    values[name] = self.backend.asarray(tape[key])
            result = self.engine.launch(launch.kernel, launch.config,
                                        *self._wrap(launch, values, shadows, "reverse"), mode="reverse")
            self.last_launch = result
            if self.replay is not None:                     # did the re-execution write what the primal did?
                for name in (n for n, i in last_writer.items() if i == index):
                    self._compare_replay(launch, name, after_primal[name], self.backend.to_host(values[name]))
            for param, adj in result.adjoints.items():      # keyed by the kernel's parameter names
                name = launch.buffer_of.get(param, param)
                adjoints[name] = adjoints.get(name, 0.0) + float(adj)
        out = {}
        for v in self.inputs:
            out[v.name] = (self.backend.to_host(shadows[v.name]).astype(np.float64) if self._is_array(v.name)
                           else np.float64(adjoints.get(v.name, 0.0)))
        return out
