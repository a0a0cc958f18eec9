"""Probe: why is an elementwise reverse kernel slower than its byte count suggests?"""
import cupy as cp, numpy as np
from numba import cuda
n = 1 << 26
f32 = np.float32
rng = cp.random.default_rng(0)
x, y = rng.standard_normal(n, dtype=f32), rng.standard_normal(n, dtype=f32)
out = cp.zeros(n, f32); dx = cp.zeros(n, f32); dy = cp.zeros(n, f32); dout = rng.standard_normal(n, dtype=f32)

def timed(fn, reps=20):
    fn(); cp.cuda.runtime.deviceSynchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(reps):
        fn()
    e.record(); e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / reps

@cuda.jit
def copy(dst, src):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = src[i]

@cuda.jit
def rev(out, dout, a, x, dx, y, dy):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]
        g = dout[i]
        dout[i] = 0
        dx[i] += a * g
        dy[i] += g

@cuda.jit
def rev_noacc(out, dout, a, x, dx, y, dy):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]
        g = dout[i]
        dout[i] = 0
        dx[i] = a * g
        dy[i] = g

@cuda.jit
def rev_nozero(out, dout, a, x, dx, y, dy):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]
        g = dout[i]
        dx[i] += a * g
        dy[i] += g

@cuda.jit
def rev_half(out, dout, a, x, dx, y, dy):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]
        g = dout[i]
        dout[i] = g * 0.5
        dx[i] += a * g
        dy[i] += g

@cuda.jit
def rev_zero_other(out, dout, a, x, dx, y, dy, z):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]
        g = dout[i]
        z[i] = 0
        dx[i] += a * g
        dy[i] += g

@cuda.jit
def only_zero(dout):
    i = cuda.grid(1)
    if i < dout.shape[0]:
        dout[i] = 0

@cuda.jit
def only_half(dout):
    i = cuda.grid(1)
    if i < dout.shape[0]:
        dout[i] = 0.5

@cuda.jit
def rev_loads_first(out, dout, a, x, dx, y, dy):
    i = cuda.grid(1)
    if i < out.shape[0]:
        xv = x[i]; yv = y[i]; g = dout[i]; ax = dx[i]; ay = dy[i]
        out[i] = a * xv + yv
        dout[i] = 0
        dx[i] = ax + a * g
        dy[i] = ay + g

g, b = ((n + 255) // 256,), (256,)
z = cp.zeros(n, f32)
print("rev_half", timed(lambda: rev_half[g, b](out, dout, 1.5, x, dx, y, dy)))
print("rev_zero_other", timed(lambda: rev_zero_other[g, b](out, dout, 1.5, x, dx, y, dy, z)))
print("only_zero", timed(lambda: only_zero[g, b](dout)), "only_half", timed(lambda: only_half[g, b](dout)))
print("cupy fill 0", timed(lambda: dout.fill(0)), "cupy fill .5", timed(lambda: dout.fill(0.5)))
print("rev_loads_first", timed(lambda: rev_loads_first[g, b](out, dout, 1.5, x, dx, y, dy)))
print("copy ms", timed(lambda: copy[g, b](out, x)), "GB/s", 2*4*n/timed(lambda: copy[g, b](out, x))/1e6)
print("cupy copy GB/s", 2*4*n/timed(lambda: cp.copyto(out, x))/1e6)
for k in (rev, rev_noacc, rev_nozero):
    for a in (1.5, f32(1.5)):
        t = timed(lambda: k[g, b](out, dout, a, x, dx, y, dy))
        print(k.__name__, type(a).__name__, "ms", t)
