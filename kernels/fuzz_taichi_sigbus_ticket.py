import math

from numba import cuda, float32, float64


@cuda.jit(device=True)
def helper(a, b):
    if a > b:
        return a * b, a
    return math.tanh(a) + b, a * 0.5

def kernel(out, x, y, a, idx, n, acc, cnt):
    i = cuda.grid(1)
    if i < out.shape[0]:
        t1 = x[21 - i]
        t2 = math.log(1.5 + t1 * t1)
        v3, v4 = helper(a, t2)
        acc5 = math.cos(a)
        for k6 in range(3):
            t7 = x[i]
            acc5 = acc5 * 0.76 + math.log(1.5 + t7 * t7) * (k6 + 1)
        t8 = x[21 - i]
        old9 = cuda.atomic.add(cnt, i, 1)
        cuda.atomic.add(acc, old9 % 3, t8)
        out[i] = math.expm1(math.sin(math.exp(math.tanh(1.78)))) + 0.5 * x[i] + 0.56 * v3 + 0.74 * v4 + 0.81 * acc5
