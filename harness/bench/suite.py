"""The benchmark set: each entry is a kernel of kernels/, its activities, the hand-written kernels
with the same semantics (reference.py) and the same computation in JAX (jaxref.py).

A hand-written kernel takes exactly the arguments the engine's bound launch flattens, so both are
launched on the same buffers; tests/test_bench.py checks that they compute the same state.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..activity import Active, Const, Duplicated


@dataclass(frozen=True)
class Bench:
    name: str
    kernel: str                           # kernels/file.py:function
    args: tuple[tuple[str, str, str], ...]   # (name, kind: n | small:K | int:V | scalar:V, activity)
    hand: dict = field(default_factory=dict)     # mode -> {label: kernel name, or (kernel, one-thread finish)}
    jax: str | None = None                # function name in jaxref.py
    block: int = 256
    note: str = ""

    def values(self, xp, n: int, seed: int = 0) -> dict:
        """name -> (value, shadow or None): float32 arrays of n elements, small coefficient arrays."""
        rng = np.random.default_rng(seed)
        out = {}
        for name, kind, activity in self.args:
            if kind == "n":
                v = rng.uniform(0.5, 1.5, n).astype(np.float32) if name != "out" else np.zeros(n, np.float32)
            elif kind.startswith("small:"):
                v = rng.uniform(0.5, 1.5, int(kind.split(":")[1])).astype(np.float32)
            elif kind.startswith("int:"):
                out[name] = (int(kind.split(":")[1]), None)
                continue
            else:
                out[name] = (np.float32(float(kind.split(":")[1])), None)
                continue
            shadow = None
            if activity == "duplicated":
                shadow = rng.standard_normal(v.shape).astype(np.float32)
            out[name] = (xp.asarray(v), None if shadow is None else xp.asarray(shadow))
        return out

    def wrapped(self, values: dict, mode: str) -> list:
        """The engine's split arguments (every shadow random: a tangent, a cotangent or the sum to add to)."""
        wrapped = []
        for name, _, activity in self.args:
            v, s = values[name]
            if activity == "duplicated":
                wrapped.append(Duplicated(v, s))
            elif activity == "active":
                wrapped.append(Active(v))
            else:
                wrapped.append(Const(v) if not isinstance(v, int) else v)
        return wrapped

    def streams(self, mode: str) -> int:
        """float32 streams of n elements a kernel must move (the byte model of DESIGN section 9)."""
        total = 0
        for name, kind, activity in self.args:
            if kind != "n":
                continue
            written = name == "out"
            if mode == "primal" or activity != "duplicated":
                total += 1
            elif mode == "forward":
                total += 2
            else:                          # reverse: value read; shadow read and written (out written too)
                total += 3
        return total


BENCHES = (
    Bench("axpy", "kernels/elementwise.py:axpy",
          (("out", "n", "duplicated"), ("a", "scalar:1.5", "const"), ("x", "n", "duplicated"), ("y", "n", "duplicated")),
          {"forward": {"hand": "axpy_forward"}, "reverse": {"hand": "axpy_reverse"}}, jax="axpy"),
    Bench("math_heavy", "kernels/elementwise.py:math_heavy",
          (("out", "n", "duplicated"), ("x", "n", "duplicated"), ("y", "n", "duplicated")),
          {"forward": {"hand": "math_heavy_forward"}, "reverse": {"hand": "math_heavy_reverse"}}, jax="math_heavy"),
    Bench("horner_c_const", "kernels/elementwise.py:polynomial",
          (("out", "n", "duplicated"), ("x", "n", "duplicated"), ("c", "small:4", "const")),
          {"forward": {"hand": "horner_forward"}, "reverse": {"hand": "horner_reverse"}}, jax="horner"),
    Bench("horner_c_duplicated", "kernels/elementwise.py:polynomial",
          (("out", "n", "duplicated"), ("x", "n", "duplicated"), ("c", "small:4", "duplicated")),
          {"forward": {"hand": "horner_dup_forward"},
           "reverse": {"hand": ("horner_dup_reverse_coarse", "horner_dup_finish"),
                       "hand_per_block": ("horner_dup_reverse", "horner_dup_finish")}}, jax="horner_dup"),
    Bench("horner_dynamic_deg8", "kernels/elementwise.py:horner_dynamic",
          (("out", "n", "duplicated"), ("x", "n", "duplicated"), ("c", "small:8", "const"), ("n", "int:8", "const")),
          {"forward": {"hand": "horner_dynamic_forward"},
           "reverse": {"hand": "horner_dynamic_reverse_direct", "hand_recompute": "horner_dynamic_reverse_recompute",
                       "hand_tape": "horner_dynamic_reverse_tape"}},
          jax="horner_dynamic"),
    Bench("conv3_w_const", "kernels/stencils.py:conv3",
          (("out", "n", "duplicated"), ("x", "n", "duplicated"), ("w", "small:3", "const"), ("d", "int:1", "const")),
          {"reverse": {"hand": "conv3_reverse", "hand_gather": "conv3_gather",
                       "hand_gather_consume": ("conv3_gather_consume", "conv3_consume")}}, jax="conv3"),
    Bench("conv3_w_duplicated", "kernels/stencils.py:conv3",
          (("out", "n", "duplicated"), ("x", "n", "duplicated"), ("w", "small:3", "duplicated"), ("d", "int:1", "const")),
          {"reverse": {"hand": ("conv3_dup_reverse_coarse", "conv3_dup_finish"),
                       "hand_per_block": ("conv3_dup_reverse", "conv3_dup_finish")}}, jax="conv3_dup"),
    Bench("active_scalar", "kernels/elementwise.py:scale",
          (("out", "n", "duplicated"), ("alpha", "scalar:2.5", "active"), ("x", "n", "duplicated")),
          {"reverse": {"hand": "scale_reverse_coarse", "hand_per_block": "scale_reverse",
                       "hand_atomic_per_thread": "scale_reverse_atomic_per_thread"}},
          jax="scale"),
    Bench("shared_block_sum", "kernels/shared.py:block_sum",
          (("out", "small:1", "duplicated"), ("x", "n", "duplicated")),
          {"reverse": {"hand": "block_sum_reverse"}}, jax="block_sum", block=64),
)


def hand_launcher(fname, config, physical_grid=None):
    """A callable launching the hand-written kernel(s) named by a `hand` entry on given arguments:
    the first on the bench's grid (a `_coarse` kernel on `physical_grid`, the generated kernel's
    capped grid: BoundLaunch.grid), the others on one thread (a `_finish`), except a `_consume`
    kernel, which runs on the bench's grid too."""
    from numba import cuda

    from . import reference
    names = (fname,) if isinstance(fname, str) else fname
    kernels = [cuda.jit(getattr(reference, n)) for n in names]

    def go(args):
        first = physical_grid if names[0].endswith("_coarse") and physical_grid else config.grid
        kernels[0][first, config.block](*args)
        for name, k in zip(names[1:], kernels[1:]):
            if name.endswith("_consume"):
                k[config.grid, config.block](*args)
            else:
                k[(1,), (1,)](*args)
    return go


def by_name(names: list[str] | None) -> list[Bench]:
    if not names:
        return list(BENCHES)
    known = {b.name: b for b in BENCHES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"harness bench: unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in names]
