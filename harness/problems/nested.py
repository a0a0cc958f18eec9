"""Check a kernel that differentiates on the device: its shadow outputs against finite differences.

A kernel `df(A, dA)` that calls `autodiff(mode, f, Duplicated(A, dA))` is itself a primal launch.
Seen from the host it maps the primal arrays named in `check.nested.args` from their initial to
their final values (F); the shadows must then hold J dA_in (forward) or J^T dA_in (reverse),
which is exactly what the gradient oracles check, with F evaluated by launching df itself.
"""
from __future__ import annotations


from harness.problems.kernel import DerivativeLaunch, KernelProblem
from harness.oracles.arrays import f64
from harness.oracles.problem import StateVar


class NestedProblem(KernelProblem):
    """`adjoints`: Active scalars of the differentiated function; the kernel
    stores each one's adjoint (what autodiff returns) in element 0 of the named array argument.
    They are inputs of F (the kernel passes them to the function), not outputs."""

    def __init__(self, engine, kernel, config, args, pairs: dict[str, str], mode: str,
                 adjoints: dict[str, str] | None = None):
        super().__init__(engine, kernel, config, args)
        names = {a.spec.name: a for a in args}
        adjoints = dict(adjoints or {})
        for primal, shadow in list(pairs.items()) + list(adjoints.items()):
            if primal not in names or shadow not in names:
                raise ValueError(f"check.nested.args names {primal!r}/{shadow!r}, which are not kernel arguments")
        for scalar, out in adjoints.items():
            if names[scalar].spec.kind != "scalar" or names[out].spec.kind != "array":
                raise ValueError(f"check.nested.args: {scalar!r} must be a scalar argument and its adjoint "
                                 f"{out!r} an array argument the kernel stores the adjoint in")
        self.pairs, self.adjoints, self.nested_mode = pairs, adjoints, mode
        self.inputs = [StateVar(p, tuple(names[p].value.shape)) for p in pairs] + \
                      [StateVar(a, ()) for a in adjoints]
        self.outputs = [StateVar(p, tuple(names[p].value.shape)) for p in pairs]
        self.width = 1

    def _run(self, primal_state: dict | None, shadows: dict, as_float64: bool) -> tuple[list, object]:
        overrides = dict(primal_state or {})
        overrides.update({self.pairs[p]: v for p, v in shadows.items()})
        values = self._device_values(overrides, as_float64=as_float64)
        return values, self._launch(values, "primal")

    def _read(self, values, names) -> dict:
        by_name = {a.spec.name: v for a, v in zip(self.args, values)}
        return {n: by_name[n].astype(self.xp.float64) for n in names}       # where the launch left them

    def base_point(self) -> dict:
        return {p: self._initial(self._arg(p)) for p in list(self.pairs) + list(self.adjoints)}

    def _arg(self, name):
        return next(a for a in self.args if a.spec.name == name)

    def primal64(self, state: dict) -> dict:
        return self._primal(state, as_float64=True)

    def primal_native(self, state: dict) -> dict:
        return self._primal(state, as_float64=False)

    def _primal(self, state: dict, as_float64: bool) -> dict:
        zero = {p: self.xp.zeros(self._arg(p).value.shape) for p in self.pairs}
        values, _ = self._run(state, zero, as_float64=as_float64)
        return self._read(values, list(self.pairs))

    def primal_finals(self) -> dict:
        raise NotImplementedError("a nested kernel's launches are primal launches: no primal state to compare")

    def derivative(self, mode: str, seed: dict, lane_seeds: list[dict] | None = None) -> DerivativeLaunch:
        """The kernel's own (primal) launch with the seed in the shadow arguments; the shadows it
        leaves are the derivative. No primal-state comparison (primal_finals None)."""
        if mode != self.nested_mode:
            raise NotImplementedError(f"the kernel differentiates in {self.nested_mode} mode only")
        if lane_seeds is not None:
            raise NotImplementedError("a nested kernel has no batch lanes")
        given = {k: f64(v, self.xp) for k, v in seed.items()}     # never written: copied into the shadows
        values, launch = self._run(None, {p: seed[p] for p in self.pairs if p in seed}, as_float64=False)
        out = self._read(values, list(self.pairs.values()) + list(self.adjoints.values()))
        result = {p: out[s] for p, s in self.pairs.items()}
        result.update({a: out[o].reshape(-1)[0] for a, o in self.adjoints.items()})
        return DerivativeLaunch(mode, given, [result], None, launch)
