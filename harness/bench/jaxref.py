"""The benchmarks' computations in JAX, for jvp/vjp references measured in the same run.

Each function returns (f, primals): f maps the differentiable arguments to the output array.
"""
from __future__ import annotations


def build(name: str, values: dict):
    import jax.numpy as jnp
    from jax import lax
    arr = {k: jnp.asarray(v[0]) for k, v in values.items() if hasattr(v[0], "shape") and v[0].ndim}
    if name == "axpy":
        a = float(values["a"][0])
        return (lambda x, y: a * x + y), (arr["x"], arr["y"])
    if name == "math_heavy":
        def f(u, v):
            s = jnp.sin(u) * jnp.exp(0.5 * v) + jnp.log(1.0 + u * u) - jnp.sqrt(2.0 + jnp.cos(v))
            s += jnp.tanh(u * v) + lax.erf(u) + (1.5 + v * v) ** 1.5 + jnp.arctan2(u, 2.0 + v)
            s += jnp.hypot(u, v) + jnp.abs(u - v) + jnp.minimum(u, v) * jnp.maximum(u, 0.25) + jnp.power(2.0 + u, 0.5)
            return s / (1.0 + jnp.abs(v))
        return f, (arr["x"], arr["y"])
    if name == "horner":
        c = arr["c"]
        return (lambda x: c[0] + x * (c[1] + x * (c[2] + x * c[3]))), (arr["x"],)
    if name == "horner_dup":
        return (lambda x, c: c[0] + x * (c[1] + x * (c[2] + x * c[3]))), (arr["x"], arr["c"])
    if name == "horner_dynamic":
        c, deg = arr["c"], int(values["n"][0])
        return (lambda x: lax.fori_loop(0, deg, lambda k, acc: acc * x + c[k], jnp.zeros_like(x))), (arr["x"],)
    if name in ("conv3", "conv3_dup"):
        d = int(values["d"][0])

        def conv(x, w):
            return w[0] * x[:-2 * d] + w[1] * x[d:-d] + w[2] * x[2 * d:]
        if name == "conv3":
            w = arr["w"]
            return (lambda x: conv(x, w)), (arr["x"],)
        return conv, (arr["x"], arr["w"])
    if name == "scale":
        return (lambda alpha, x: alpha * x), (jnp.float32(values["alpha"][0]), arr["x"])
    if name == "nbody":
        mass = arr["mass"]

        def accel(pos):                       # all pairs at once: m x m x 3 differences
            d = pos[None, :, :] - pos[:, None, :]
            r2 = jnp.sum(d * d, axis=-1) + 0.01
            w = mass[None, :] / (r2 * jnp.sqrt(r2))
            return jnp.sum(w[:, :, None] * d, axis=1)
        return accel, (arr["pos"],)
    if name == "block_sum":
        return (lambda x: jnp.sum(x * x, keepdims=True)), (arr["x"],)
    raise KeyError(name)
