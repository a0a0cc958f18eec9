import math

from numba import cuda, float32, float64

def kernel(out, x, y, a, idx, n, acc, cnt):
    i = cuda.grid(1)
    if i >= out.shape[0]:
        return
    acc1 = y[i]
    for k2 in range(3):
        acc1 = acc1 * 0.44 + 1.82 * (x[19 - i]) * (k2 + 1)
    t4 = y[i]
    t5 = x[idx[i]]
    t6 = x[19 - i]
    v3 = math.sqrt(1.0 + acc1 * acc1) if t4 > -0.49 else (t5 if t5 > t6 else t6 * 0.5)
    t7 = v3 + acc1
    cuda.atomic.min(acc, i % 3, t7)
    acc8 = math.acos(0.9 * math.sin(a))
    for k9 in range(4):
        acc8 = acc8 * 0.54 + 0.81 * (k9 + 1)
    out[i] = math.fabs((float((y[(i + 1) % 20])))) + 0.5 * x[i] + 0.3 * acc1 + 0.67 * v3 + 0.8 * acc8
