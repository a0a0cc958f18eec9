"""What Warp and Taichi lack, in one table: every adapter refusal of a construct is built from it,
and docs/engines.md's "What the adapters cannot express" table is printed from it
(`python -m harness.adapters.limits`; tests/unit/test_docs.py checks the two agree).

A row names the numba.cuda construct, then per system what that system lacks (None where the
adapter translates it) and the page of the system's documentation that says so. A refusal that is
the harness's own (a construct the translator does not handle yet) says so in its text.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import UnsupportedError

WARP_DIFF = "https://nvidia.github.io/warp/user_guide/differentiability.html"
WARP_TILES = "https://nvidia.github.io/warp/user_guide/tiles.html"
WARP_FUNCTIONS = "https://nvidia.github.io/warp/language_reference/builtins.html"
TAICHI_AD = "https://docs.taichi-lang.org/docs/differentiable_programming"
TAICHI_PERF = "https://docs.taichi-lang.org/docs/performance"
TAICHI_MATH = "https://docs.taichi-lang.org/api/taichi/math/"
WARP_RANDOM = "https://nvidia.github.io/warp/language_reference/builtins.html#random"
TAICHI_RANDOM = "https://docs.taichi-lang.org/api/taichi/#taichi.random"


# The math functions of numba.cuda each system has no built-in for and the ports cannot spell from
# the ones it has (checked against the targets' spellings by tests/suite/test_engines.py);
# math.copysign and math.fmod are the translator's own gaps.
MISSING_MATH = {"warp": {"lgamma"}, "taichi": {"lgamma", "erf", "erfc"}}
UNTRANSLATED_MATH = {"copysign", "fmod"}


@dataclass(frozen=True)
class Limit:
    construct: str
    warp: str | None            # what Warp lacks; None: translated
    taichi: str | None
    warp_link: str = ""
    taichi_link: str = ""

    def reason(self, system: str) -> str | None:
        return self.warp if system == "warp" else self.taichi

    def link(self, system: str) -> str:
        return self.warp_link if system == "warp" else self.taichi_link


LIMITS: dict[str, Limit] = {
    "forward": Limit("forward mode", "no forward mode in Warp (a wp.kernel compiles a primal and an adjoint)",
                     None, WARP_DIFF),
    "active_scalar": Limit("Active scalar arguments (reverse adjoint, forward tangent)",
                           "no adjoint for a scalar kernel argument", "scalar kernel arguments have no gradient or dual",
                           WARP_DIFF, TAICHI_AD),
    "batch": Limit("BatchDuplicated", "no batched shadows", "no batched shadows", WARP_DIFF, TAICHI_AD),
    "shared": Limit("`cuda.shared.array`, `cuda.syncthreads()`",
                    "no per-thread-indexed block-shared array or block barrier in a SIMT wp.kernel: Warp's "
                    "shared memory is its tiles (wp.tile_*, cooperative over a block), a different model",
                    "on the CPU: Taichi's block-level arrays and barrier (ti.simt.block) exist on GPU backends only "
                    "(translated to ti.simt.block.SharedArray / sync on cuda, 1-D launches)",
                    WARP_TILES, TAICHI_PERF),
    "warp_intrinsics": Limit("warp shuffles and votes (`cuda.laneid` and `cuda.warpsize` are translated)",
                             "no warp-level intrinsics in a wp.kernel (tiles instead)",
                             "on the CPU: no warp-level intrinsics (ti.simt.warp's shuffles and votes exist on CUDA "
                             "only, for 32-bit types; the adapter does not translate them there yet)",
                             WARP_TILES, TAICHI_PERF),
    "fence": Limit("memory fences (`cuda.threadfence`, `threadfence_block`, `threadfence_system`)",
                   "no memory fence inside a wp.kernel (wp.synchronize* are host calls)",
                   "ti.simt.grid.memfence() exists, but neither the CPU backend nor its autodiff compiles it "
                   "(`Not supported`)", WARP_FUNCTIONS, TAICHI_PERF),
    "grid_sync": Limit("a grid-wide barrier (`cuda.cg.this_grid().sync()`)",
                       "no grid-wide barrier inside a wp.kernel (only a launch boundary synchronises the grid)",
                       "no grid-wide barrier inside a kernel (only a kernel boundary synchronises the grid)",
                       WARP_FUNCTIONS, TAICHI_PERF),
    "local_dynamic_index": Limit("a store into a thread's local array (`cuda.local.array`) at a run-time index, "
                                 "differentiated", None,
                                 "its 1.7.4 autodiff of a local vector stored at a run-time index: reverse mode fails "
                                 "to compile or aborts the process (scalarize.cpp assertion), forward mode gives a "
                                 "zero dual (reads at run-time indices differentiate correctly)",
                                 "", TAICHI_AD),
    "nested_ad": Limit("device-side `autodiff` (nested AD)", "no differentiation inside a kernel",
                       "no differentiation inside a kernel", WARP_DIFF, TAICHI_AD),
    "math": Limit("math functions without a built-in or an elementary spelling (`hypot`, `log1p`, `expm1`, `exp2`, "
                  "the inverse hyperbolics, and Taichi's `atan`, `sinh`, `cosh`, `log10`, `cbrt` are spelled out)",
                  "no " + ", ".join(sorted(MISSING_MATH["warp"])), "no " + ", ".join(sorted(MISSING_MATH["taichi"])),
                  WARP_FUNCTIONS, TAICHI_MATH),
    "ad_control": Limit("`while`, `break`, `continue` in a differentiated kernel", None,
                        "Taichi's autodiff refuses them (`auto_diff.cpp ... Not supported`)", "", TAICHI_AD),
    "return_in_loop": Limit("a return inside a loop of the kernel or of a device function", None,
                            "no early exit from the parallel loop; a Taichi function returns once, at its end",
                            "", TAICHI_AD),
    "spin_wait": Limit("a thread waiting in a loop on a value other threads set through atomics (a spin lock: "
                       "`while ...: if cuda.atomic.add(lock, i, 0) < 0: ...`, SpeechBrain's transducer recursions)",
                       "no forward-progress guarantee between the threads of a launch: on the CPU a wp.kernel's "
                       "threads run one after another, so a thread waiting for a later one never returns",
                       "no forward-progress guarantee between the iterations of the parallel loop: the CPU "
                       "backend runs them in chunks on a few threads, so an iteration waiting for a later one "
                       "never returns", WARP_FUNCTIONS, TAICHI_PERF),
    "rng": Limit("numba's random number generator (`numba.cuda.random`: xoroshiro128p states and draws)",
                 "Warp's random numbers (wp.rand_init, wp.randf) come from its own PCG generator with a 32-bit "
                 "state: a translation cannot draw the numbers numba's xoroshiro128p states give, and precomputing "
                 "them on the host would not be the kernel as written",
                 "ti.random() draws from Taichi's own runtime generator, seeded once per program "
                 "(ti.init(random_seed=...)), with no per-thread xoroshiro128p state: a translation cannot draw "
                 "the numbers numba's states give",
                 WARP_RANDOM, TAICHI_RANDOM),
}


def refusal(key: str, system: str, detail: str = "", *, file: str | None = None,
            line: int | None = None) -> UnsupportedError:
    """The UnsupportedError of `system` lacking the construct of LIMITS[key]."""
    limit = LIMITS[key]
    reason = limit.reason(system)
    if reason is None:
        raise KeyError(f"{system} has {key}: nothing to refuse")
    text = f"{detail}: " if detail else ""
    return UnsupportedError(f"{text}{system_name(system)}: {reason} (see {limit.link(system)})", file=file, line=line)


def system_name(system: str) -> str:
    return {"warp": "Warp", "taichi": "Taichi"}.get(system, system)


def markdown_table() -> str:
    rows = ["| construct | Warp | Taichi |", "|---|---|---|"]
    for limit in LIMITS.values():
        cells = [limit.construct]
        for system in ("warp", "taichi"):
            reason = limit.reason(system)
            cells.append("translated" if reason is None else f"{reason} ([docs]({limit.link(system)}))")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
