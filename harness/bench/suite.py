"""The benchmark set: each entry is a kernel of kernels/, its activities, the hand-written kernels
with the same semantics (reference.py) and the same computation in JAX (jaxref.py).

A hand-written kernel takes exactly the arguments the engine's bound launch flattens, so both are
launched on the same buffers; tests/suite/test_bench.py checks that they compute the same state.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import inspect
import math

import numpy as np

from harness.core.activity import Active, Const, Duplicated

TILE = 16          # kernels/tiled.py's tile side


@dataclass(frozen=True)
class Bench:
    name: str
    kernel: str                           # kernels/file.py:function
    # (name, kind, activity); kinds: n (n elements) | small:K | int:V | scalar:V, and for the block-level
    # benches square (side x side matrices) | bodies (m elements) | bodies3 (m x 3)
    args: tuple[tuple[str, str, str], ...]
    hand: dict = field(default_factory=dict)     # mode -> {label: kernel name, or (kernels...: see hand_launcher)}
    jax: str | None = None                # function name in jaxref.py
    block: int = 256
    note: str = ""
    geometry: str = "1d"                  # 1d | square (2-D grid of TILE x TILE blocks over a side x side matrix)
    cap: int = 0                          # most elements (square: side * side; bodies: m) however large n is
    library: dict = field(default_factory=dict)  # mode -> {label: function of libref.py} (cuBLAS through cupy)
    test_n: int = 150                     # the size tests/suite/test_bench.py checks the hand kernels at
    tile_loop: bool = False               # its dynamic loop walks one tile per block of the grid's x axis

    def size(self, n: int) -> int:
        """The side of the matrices (square) or the number of elements (1d), n capped."""
        n = min(n, self.cap) if self.cap else n
        return max(1, math.isqrt(n)) if self.geometry == "square" else n

    def shape(self, kind: str, n: int) -> tuple:
        k = self.size(n)
        return {"n": (k,), "square": (k, k), "bodies": (k,), "bodies3": (k, 3)}[kind]

    def config(self, n: int, block: int | None = None):
        """The launch: n threads in blocks of `block`, or one thread per matrix element in
        TILE x TILE blocks on a square grid (the tiled kernels step over gridDim.x tiles)."""
        from harness.engine.runtime.launch import LaunchConfig
        k = self.size(n)
        if self.geometry == "square":
            g = -(-k // TILE)
            return LaunchConfig.of((g, g), (TILE, TILE))
        return LaunchConfig.threads(k, block or self.block)

    def tape_size(self, n: int, default: int) -> int:
        """The engine's tape_size for the generated reverse at size n: a tile loop runs one
        iteration per block of the grid's x axis, and its reverse sweep replays every one (a
        shorter tape would leave the last iterations unreplayed: an incomplete derivative)."""
        return max(default, self.config(n).grid[0]) if self.tile_loop else default

    def values(self, xp, n: int, seed: int = 0) -> dict:
        """name -> (value, shadow or None): float32 arrays of n elements, small coefficient arrays."""
        rng = np.random.default_rng(seed)
        out = {}
        for name, kind, activity in self.args:
            if kind in ("n", "square", "bodies", "bodies3"):
                shape = self.shape(kind, n)
                v = rng.uniform(0.5, 1.5, shape).astype(np.float32) if name not in ("out", "C", "acc") \
                    else np.zeros(shape, np.float32)
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
        """float32 streams of n elements a kernel must move (the bench's byte model)."""
        total = 0
        for name, kind, activity in self.args:
            if kind != "n":
                continue
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
    # block-level kernels with barriers in block-uniform loops (kernels/tiled.py)
    Bench("tiled_matmul", "kernels/tiled.py:tiled_matmul",
          (("A", "square", "duplicated"), ("B", "square", "duplicated"), ("C", "square", "duplicated")),
          {"forward": {"hand": "tiled_matmul_forward"},
           "reverse": {"hand": ("tiled_matmul_reverse_dA", "tiled_matmul_reverse_dB", "tiled_matmul_reverse_primal")}},
          library={"reverse": {"cupy_matmul_pair": "matmul_reverse_pair"}},
          geometry="square", cap=2048 * 2048, test_n=40 * 40, tile_loop=True,
          note="C = A B, 2048 x 2048 float32; the hand adjoint is tiled like the primal (dA = dC B^T, dB = A^T dC)"),
    Bench("tree_sum_while", "kernels/tiled.py:tree_sum_while",
          (("out", "small:1", "duplicated"), ("x", "n", "duplicated")),
          {"reverse": {"hand": "tree_sum_while_reverse"}}, jax="block_sum", block=256),
    Bench("nbody_tiles", "kernels/tiled.py:nbody_accel",
          (("pos", "bodies3", "duplicated"), ("mass", "bodies", "const"), ("acc", "bodies3", "duplicated")),
          {"reverse": {"hand": ("nbody_accel_reverse", "nbody_accel_reverse_consume")}},
          jax="nbody", block=64, cap=16384, test_n=150, tile_loop=True,
          note="16,384 bodies, O(n^2) pairs in tiles of 64 through shared memory"),
)


def hand_launcher(fname, config, physical_grid=None):
    """A callable launching the hand-written kernel(s) named by a `hand` entry on given arguments,
    in order: a `_finish` kernel on one thread, a `_coarse` one on `physical_grid` (the generated
    kernel's capped grid: BoundLaunch.grid), every other on the bench's grid. Each kernel takes the
    leading arguments it names: the generated kernel's scratch buffers (tape-overflow flag, ...)
    that a hand kernel has no use for are left off."""
    from numba import cuda

    from harness.bench import reference
    names = (fname,) if isinstance(fname, str) else fname
    functions = [getattr(reference, n) for n in names]
    kernels = [cuda.jit(f) for f in functions]
    arity = [len(inspect.signature(f).parameters) for f in functions]

    def go(args):
        for name, k, count in zip(names, kernels, arity):
            if name.endswith("_finish"):
                grid, block = (1,), (1,)
            elif name.endswith("_coarse") and physical_grid:
                grid, block = physical_grid, config.block
            else:
                grid, block = config.grid, config.block
            k[grid, block](*args[:count])
    return go


def by_name(names: list[str] | None) -> list[Bench]:
    if not names:
        return list(BENCHES)
    known = {b.name: b for b in BENCHES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"harness bench: unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in names]
