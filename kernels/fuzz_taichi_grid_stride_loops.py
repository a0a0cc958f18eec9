import math

from numba import cuda, float32, float64

def kernel(out, x, y, a, idx, n, acc, cnt):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        t1 = math.sin(1.54)
        cuda.atomic.add(acc, 0, t1)
        t4 = x[idx[i]]
        acc2 = math.pow(1.2 + t4 * t4, 0.7)
        for k3 in range(4):
            acc2 = acc2 * 0.72 + min(y[i], a) * (k3 + 1)
        t5 = y[i]
        out[i] = math.asin(0.9 * math.tanh((math.pow(1.2 + t5 * t5, 0.7)))) + 0.5 * x[i] + 0.47 * acc2
