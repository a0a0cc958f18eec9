"""numba's random number generator in differentiated kernels (harness/engine/rules/rng.py): draws
are constants, the derivative launches draw the primal's numbers from the same states, and a
reverse sweep replays a loop's draws from the tape instead of drawing again. The refusals name
their line. End to end (both modes, float32 and float64, sim and ptx) in cases/rng-*.yaml and
cases/public-numba-cuda-random-*.yaml."""
from __future__ import annotations

import importlib.util
import textwrap

import numpy as np
import pytest

from harness.core.activity import Const, Duplicated
from harness.core.errors import ActivityError, UnsupportedError
from harness.core.rng_states import seeded_states
from harness.engine.runtime.launch import LaunchConfig

HEADER = ("import math\nfrom numba import cuda\n"
          "from numba.cuda.random import (xoroshiro128p_uniform_float64, xoroshiro128p_normal_float32,\n"
          "                               xoroshiro128p_jump)\n"
          "import numba.cuda.random as cuda_random\n\n")
N, STEPS = 16, 5
CONFIG = LaunchConfig.threads(N, 8)


@pytest.fixture
def kernel(tmp_path, launching_backend):      # numba configured (simulator or not) before import
    count = [0]

    def make(source: str, name: str = "k"):
        count[0] += 1
        path = tmp_path / f"rng_{count[0]}.py"
        path.write_text(HEADER + textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, name)
    return make


def line_of(fn, text: str) -> int:
    import inspect
    lines, first = inspect.getsourcelines(fn.py_func if hasattr(fn, "py_func") else fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


# v_{k+1} = sin(v_k) * (1 + u_k): dv_K/dv_0 is the product of cos(v_k) (1 + u_k) along the path, so a
# derivative taken with other numbers than the primal's (or a replay that draws again) is wrong
WALK = """
@cuda.jit
def k(out, x, seen, states, steps):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        for s in range(steps):
            u = xoroshiro128p_uniform_float64(states, i)
            seen[i, s] = u
            v = math.sin(v) * (1.0 + u)
        out[i] = v
"""


def _walk_derivative(x, seen):
    d = np.ones_like(x)
    v = x.copy()
    for s in range(seen.shape[1]):
        d *= np.cos(v) * (1.0 + seen[:, s])
        v = np.sin(v) * (1.0 + seen[:, s])
    return v, d


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_derivative_launches_draw_the_primals_numbers(kernel, engine, launching_backend, mode):
    be = launching_backend
    k = kernel(WALK)
    x = np.linspace(-1.0, 1.0, N)
    states = seeded_states(N, 4)
    out, seen = be.asarray(np.zeros(N)), be.asarray(np.zeros((N, STEPS)))
    engine.launch(k, CONFIG, out, be.asarray(x), seen, be.asarray(states.copy()), STEPS)
    drawn = be.to_host(seen)
    assert len(np.unique(drawn)) == N * STEPS            # every thread and step drew its own number
    primal_out, derivative = _walk_derivative(x, drawn)
    np.testing.assert_allclose(be.to_host(out), primal_out, rtol=1e-12)

    out2, seen2 = be.asarray(np.zeros(N)), be.asarray(np.zeros((N, STEPS)))
    seed = be.asarray(np.ones(N) if mode == "reverse" else np.zeros(N))
    xs = be.asarray(np.zeros(N) if mode == "reverse" else np.ones(N))
    engine.launch(k, CONFIG, Duplicated(out2, seed), Duplicated(be.asarray(x), xs), Const(seen2),
                  Const(be.asarray(states.copy())), STEPS, mode=mode)
    np.testing.assert_array_equal(be.to_host(seen2), drawn)
    np.testing.assert_allclose(be.to_host(out2), primal_out, rtol=1e-12)
    np.testing.assert_allclose(be.to_host(xs if mode == "reverse" else seed), derivative, rtol=1e-12)


def test_the_reverse_sweep_reads_a_loops_draws_from_the_tape(kernel, engine, launching_backend):
    be = launching_backend
    k = kernel(WALK)
    result = engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N)), be.asarray(np.ones(N))),
                           Duplicated(be.asarray(np.zeros(N)), be.asarray(np.zeros(N))),
                           Const(be.asarray(np.zeros((N, STEPS)))), Const(be.asarray(seeded_states(N, 1))), STEPS,
                           mode="reverse")
    source = open(result.plan.source_path).read()
    assert source.count("xoroshiro128p_uniform_float64(states, i)") == 1      # the forward sweep's only
    assert "from numba.cuda.random import xoroshiro128p_uniform_float64" in source
    tape = [line.split("=")[0].strip() for line in source.splitlines() if "cuda.local.array" in line]
    draw_target = next(line.split("=")[0].strip() for line in source.splitlines() if "xoroshiro128p_uniform_float64(" in line)
    assert f"_tape_{draw_target.lstrip('_')}" in tape


NESTED_WALK = """
@cuda.jit
def k(out, x, seen, states, outer, inner):
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        for a in range(outer):
            for b in range(inner):
                u = xoroshiro128p_uniform_float64(states, i)
                seen[i, a * inner + b] = u
                v = math.sin(v) * (1.0 + u)
        out[i] = v
"""


def test_a_nested_loops_draws_are_replayed_from_the_value_log(kernel, engine, launching_backend):
    """The reverse of each outer iteration replays the inner loop, which must see the numbers the
    forward sweep drew (the value log), not draw again from the advanced states."""
    be = launching_backend
    k = kernel(NESTED_WALK)
    outer, inner = 3, 2
    x = np.linspace(-1.0, 1.0, N)
    states = seeded_states(N, 9)
    out, seen, dx = be.asarray(np.zeros(N)), be.asarray(np.zeros((N, outer * inner))), be.asarray(np.zeros(N))
    engine.launch(k, CONFIG, Duplicated(out, be.asarray(np.ones(N))), Duplicated(be.asarray(x), dx), Const(seen),
                  Const(be.asarray(states.copy())), outer, inner, mode="reverse")
    drawn = be.to_host(seen)
    assert len(np.unique(drawn)) == N * outer * inner
    primal_out, derivative = _walk_derivative(x, drawn)
    np.testing.assert_allclose(be.to_host(out), primal_out, rtol=1e-12)
    np.testing.assert_allclose(be.to_host(dx), derivative, rtol=1e-12)


def test_a_draw_in_a_device_function_through_the_module(kernel, engine, launching_backend):
    """`cuda_random.xoroshiro128p_normal_float32(...)` in a device function: the same Draw."""
    be = launching_backend
    k = kernel("""
    @cuda.jit(device=True)
    def noisy(states, i, v):
        return v * v + cuda_random.xoroshiro128p_normal_float32(states, i)

    @cuda.jit
    def k(out, x, states):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = noisy(states, i, x[i])
    """)
    x = np.linspace(0.5, 2.0, N).astype(np.float32)
    dx = be.asarray(np.zeros(N, np.float32))
    engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N, np.float32)), be.asarray(np.ones(N, np.float32))),
                  Duplicated(be.asarray(x), dx), Const(be.asarray(seeded_states(N, 2))), mode="reverse")
    np.testing.assert_allclose(be.to_host(dx), 2 * x, rtol=1e-6)


def test_every_thread_drawing_one_state_is_refused(kernel, engine, launching_backend):
    be = launching_backend
    k = kernel("""
    @cuda.jit
    def k(out, x, states):
        i = cuda.grid(1)
        out[i] = x[i] * xoroshiro128p_uniform_float64(states, 0)
    """)
    with pytest.raises(UnsupportedError, match=rf":{line_of(k, 'xoroshiro')}: every thread draws from the same "
                                               r"generator state 'states\[0\]'"):
        engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N)), be.asarray(np.ones(N))),
                      Duplicated(be.asarray(np.ones(N)), be.asarray(np.zeros(N))),
                      Const(be.asarray(seeded_states(1, 0))), mode="reverse")


def test_one_thread_drawing_one_state_is_accepted(kernel, engine, launching_backend):
    be = launching_backend
    k = kernel("""
    @cuda.jit
    def k(out, x, states):
        i = cuda.grid(1)
        if i == 0:
            out[0] = x[0] * xoroshiro128p_uniform_float64(states, 0)
    """)
    dx = be.asarray(np.zeros(N))
    out = be.asarray(np.zeros(N))
    engine.launch(k, CONFIG, Duplicated(out, be.asarray(np.ones(N))), Duplicated(be.asarray(np.ones(N)), dx),
                  Const(be.asarray(seeded_states(1, 0))), mode="reverse")
    assert be.to_host(dx)[0] == be.to_host(out)[0] != 0.0      # d (x u) / dx = u = out / x with x = 1


def test_states_marked_duplicated_are_an_activity_error(kernel, engine, launching_backend):
    be = launching_backend
    k = kernel(WALK)
    states = be.asarray(seeded_states(N, 0))
    with pytest.raises(ActivityError, match="'states'.*generator states cannot be differentiated"):
        engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N)), be.asarray(np.ones(N))),
                      Duplicated(be.asarray(np.zeros(N)), be.asarray(np.zeros(N))),
                      Const(be.asarray(np.zeros((N, STEPS)))), Duplicated(states, be.asarray(seeded_states(N, 0))),
                      STEPS, mode="reverse")


@pytest.mark.parametrize("source, match", [
    # a draw from an array that is not generator states
    ("""
    @cuda.jit
    def k(out, x, states):
        i = cuda.grid(1)
        out[i] = xoroshiro128p_uniform_float64(x, i)
    """, "first argument of `xoroshiro128p_uniform_float64` must be an array of numba's xoroshiro128p"),
    # beside an atomic max on a differentiable array: its winner passes replay the kernel without writes
    ("""
    @cuda.jit
    def k(out, x, states):
        i = cuda.grid(1)
        cuda.atomic.max(out, 0, x[i] * xoroshiro128p_uniform_float64(states, i))
    """, "draws random numbers"),
])
def test_refusals_name_the_draw(kernel, engine, launching_backend, source, match):
    be = launching_backend
    k = kernel(source)
    with pytest.raises(UnsupportedError, match=rf":{line_of(k, 'xoroshiro')}: .*{match}"):
        engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N)), be.asarray(np.ones(N))),
                      Duplicated(be.asarray(np.ones(N)), be.asarray(np.zeros(N))),
                      Const(be.asarray(seeded_states(N, 0))), mode="reverse")


def test_other_record_arrays_are_refused_naming_the_argument(kernel, engine, launching_backend):
    be = launching_backend
    k = kernel(WALK)
    other = np.zeros(N, np.dtype([("a", np.float64), ("b", np.int32)]))
    with pytest.raises(UnsupportedError, match=r"'states'.*array of records"):
        engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N)), be.asarray(np.ones(N))),
                      Duplicated(be.asarray(np.zeros(N)), be.asarray(np.zeros(N))),
                      Const(be.asarray(np.zeros((N, STEPS)))), Const(be.asarray(other)), STEPS, mode="reverse")


def test_a_kernel_that_seeds_jumps_and_draws_raw_words(kernel, engine, launching_backend):
    """init_xoroshiro128p_state, xoroshiro128p_jump and xoroshiro128p_next write the state as the
    kernel says in every launch, so the derivative launch draws the primal's numbers."""
    be = launching_backend
    k = kernel("""
    @cuda.jit
    def k(out, x, states, seed):
        i = cuda.grid(1)
        if i < out.shape[0]:
            cuda_random.init_xoroshiro128p_state(states, i, seed + i)
            xoroshiro128p_jump(states, i)
            skip = cuda_random.xoroshiro128p_next(states, i)
            out[i] = x[i] * x[i] * xoroshiro128p_uniform_float64(states, i)
    """)
    x = np.linspace(0.5, 1.5, N)
    out = be.asarray(np.zeros(N))
    engine.launch(k, CONFIG, out, be.asarray(x), be.asarray(seeded_states(N, 0)), 9)
    u = be.to_host(out) / (x * x)
    assert len(np.unique(u)) == N and np.all((0 <= u) & (u < 1))
    dx = be.asarray(np.zeros(N))
    engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N)), be.asarray(np.ones(N))), Duplicated(be.asarray(x), dx),
                  Const(be.asarray(seeded_states(N, 5))), 9, mode="reverse")     # init overwrites the states
    np.testing.assert_allclose(be.to_host(dx), 2 * x * u, rtol=1e-12)


def test_draw_arguments_by_keyword(kernel, engine, launching_backend):
    be = launching_backend
    k = kernel("""
    @cuda.jit
    def k(out, x, states):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = x[i] * xoroshiro128p_uniform_float64(index=i, states=states)
    """)
    x = np.linspace(0.5, 1.5, N)
    out, dx = be.asarray(np.zeros(N)), be.asarray(np.zeros(N))
    engine.launch(k, CONFIG, Duplicated(out, be.asarray(np.ones(N))), Duplicated(be.asarray(x), dx),
                  Const(be.asarray(seeded_states(N, 6))), mode="reverse")
    np.testing.assert_allclose(be.to_host(dx), be.to_host(out) / x, rtol=1e-12)


@pytest.mark.parametrize("call, match", [
    ("xoroshiro128p_uniform_float64(states, i, 3)", r"takes 2 arguments, got 3"),
    ("xoroshiro128p_uniform_float64(states, idx=i)", r"unexpected or repeated argument idx"),
    ("xoroshiro128p_uniform_float64(states)", r"is missing index"),
    ("xoroshiro128p_uniform_float64(grid_states, i)", r"takes a 1-d array of generator states"),
])
def test_malformed_draws_are_refused_naming_the_line(kernel, engine, launching_backend, call, match):
    be = launching_backend
    k = kernel(f"""
    @cuda.jit
    def k(out, x, states, grid_states):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = x[i] * {call}
    """)
    with pytest.raises(UnsupportedError, match=rf":{line_of(k, 'xoroshiro')}: .*{match}"):
        engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N)), be.asarray(np.ones(N))),
                      Duplicated(be.asarray(np.ones(N)), be.asarray(np.zeros(N))), Const(be.asarray(seeded_states(N, 0))),
                      Const(be.asarray(seeded_states(N, 0).reshape(4, 4))), mode="reverse")


def test_draws_spelled_through_the_cuda_and_numba_modules(kernel, engine, launching_backend):
    be = launching_backend
    k = kernel("""
    import numba

    @cuda.jit
    def k(out, x, states):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = x[i] * cuda.random.xoroshiro128p_uniform_float64(states, i) \\
                + numba.cuda.random.xoroshiro128p_normal_float64(states, i)
    """)
    x = np.linspace(0.5, 1.5, N)
    dx = be.asarray(np.zeros(N))
    result = engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N)), be.asarray(np.ones(N))),
                           Duplicated(be.asarray(x), dx), Const(be.asarray(seeded_states(N, 8))), mode="reverse")
    source = open(result.plan.source_path).read()
    assert "from numba.cuda.random import xoroshiro128p_normal_float64, xoroshiro128p_uniform_float64" in source
    probe = be.asarray(np.zeros(N))           # the uniform draws alone: x = 1 in a primal launch of a twin
    twin = kernel("""
    @cuda.jit
    def k(out, states):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = xoroshiro128p_uniform_float64(states, i)
    """)
    engine.launch(twin, CONFIG, probe, be.asarray(seeded_states(N, 8)))
    np.testing.assert_allclose(be.to_host(dx), be.to_host(probe), rtol=1e-12)


@pytest.mark.parametrize("source", [
    # a loop counter: every thread of the block draws states[0], states[1], ... in step
    """
    @cuda.jit
    def k(out, x, states):
        i = cuda.grid(1)
        v = x[i]
        for s in range(3):
            v = v * xoroshiro128p_uniform_float64(states, s)
        out[i] = v
    """,
    # the block's index: one state per block, drawn by all of its threads
    """
    @cuda.jit
    def k(out, x, states):
        i = cuda.grid(1)
        out[i] = x[i] * xoroshiro128p_uniform_float64(states, cuda.blockIdx.x)
    """,
])
def test_a_state_shared_by_a_blocks_threads_is_refused(kernel, engine, launching_backend, source):
    be = launching_backend
    k = kernel(source)
    with pytest.raises(UnsupportedError, match=rf":{line_of(k, 'xoroshiro')}: every thread (of a block )?draws from "
                                               r"the same generator state"):
        engine.launch(k, CONFIG, Duplicated(be.asarray(np.zeros(N)), be.asarray(np.ones(N))),
                      Duplicated(be.asarray(np.ones(N)), be.asarray(np.zeros(N))),
                      Const(be.asarray(seeded_states(N, 0))), mode="forward")


def test_one_thread_per_block_drawing_the_blocks_state_is_accepted(kernel, engine, launching_backend):
    be = launching_backend
    k = kernel("""
    @cuda.jit
    def k(out, x, states):
        b = cuda.blockIdx.x
        if cuda.threadIdx.x == 0:
            out[b] = x[b] * xoroshiro128p_uniform_float64(states, b)
    """)
    out, dx = be.asarray(np.zeros(N)), be.asarray(np.zeros(N))
    engine.launch(k, CONFIG, Duplicated(out, be.asarray(np.ones(N))), Duplicated(be.asarray(np.ones(N)), dx),
                  Const(be.asarray(seeded_states(N, 3))), mode="reverse")
    blocks = CONFIG.grid[0]
    assert np.all(be.to_host(dx)[:blocks] == be.to_host(out)[:blocks]) and np.all(be.to_host(out)[:blocks] > 0)
