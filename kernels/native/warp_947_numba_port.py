"""numba.cuda port of the Warp kernel of NVIDIA/warp issue 947 (warp_947_broke_rule.py), with the
report's parameter order, for the bundled engine (and the Taichi adapter's translation)."""


def func_broke_rule_1(x, b, loss):
    loss[0] = x[1] * b[0]
    b[0] += 100.0
