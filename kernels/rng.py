"""Kernels that draw from numba's random number generator (numba.cuda.random): the draws are
constants to the derivative, and every launch of a run starts from the same generator states, so
finite differences, the forward and the reverse kernel all see the numbers the primal drew."""
import math

from numba import cuda
from numba.cuda.random import (xoroshiro128p_normal_float32, xoroshiro128p_normal_float64,
                               xoroshiro128p_uniform_float32)


@cuda.jit
def noisy_square(out, x, states):
    """A differentiable output with noise added: d out / d x = 2 x whatever the draw."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * x[i] + 0.1 * xoroshiro128p_normal_float64(states, i)


@cuda.jit
def langevin_steps(out, x, states, steps):
    """A draw inside a loop, multiplied into a nonlinear update: the reverse sweep must replay
    each iteration with the number that iteration drew."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        v = x[i]
        for k in range(steps):
            noise = xoroshiro128p_normal_float64(states, i)
            v = v - 0.05 * v * v * v + 0.2 * math.sin(v) * noise
        out[i] = v


@cuda.jit
def dropout(out, x, scale, p, states):
    """Dropout: an element survives when its uniform draw exceeds p, rescaled by 1 / (1 - p); the
    branch the reverse sweep takes must be the one the primal took."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        if xoroshiro128p_uniform_float32(states, i) > p:
            out[i] = scale * x[i] / (1.0 - p)
        else:
            out[i] = 0.0


@cuda.jit(device=True)
def jittered(states, i, v):
    return v + 0.01 * xoroshiro128p_normal_float32(states, i)


@cuda.jit
def jitter_then_square(out, x, states, rows):
    """Draws inside a device function, in a grid-stride loop over rows, twice per row."""
    i = cuda.grid(1)
    for r in range(i, rows, cuda.gridsize(1)):
        a = jittered(states, i, x[r])
        b = jittered(states, i, x[r])
        out[r] = a * b


@cuda.jit
def one_state_for_all(out, x, states):
    """Every thread draws from states[0]: a race on the generator state."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] + xoroshiro128p_uniform_float32(states, 0)


@cuda.jit
def noisy_step(u_next, u, sigma, states):
    """One step of a stochastic update: each launch draws the next number of every thread's state."""
    i = cuda.grid(1)
    if i < u.shape[0]:
        v = u[i]
        u_next[i] = v - 0.1 * v * v * v + sigma * math.sin(v) * xoroshiro128p_normal_float64(states, i)
