"""Public kernels: skglm's numba.cuda FISTA solver for the Lasso (a residual X @ w - y, a gradient
X.T @ r, a gradient step followed by soft-thresholding, and the FISTA extrapolation).

Repository: https://github.com/scikit-learn-contrib/skglm (commit 0677519c40ffe0fb04d5ced873ea101815a91a2a)
Licence: BSD-3-Clause (LICENSE of the repository: "Copyright (c) 2023, scikit-learn-contrib")
Path: skglm/gpu/numba_solver.py
Edits: none to the kernels. Only the kernels are copied, with the module imports they use; the
NumbaSolver class that launches them (and its host-utility imports) is left out.

Redistribution and use in source and binary forms, with or without modification, are permitted
provided that the conditions of the BSD 3-Clause License are met: redistributions of source code
must retain the above copyright notice, this list of conditions and the following disclaimer.
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
IMPLIED WARRANTIES ARE DISCLAIMED.
"""
import math
import numpy as np
from numba import cuda


@cuda.jit
def _compute_minus_residual(X_gpu, y_gpu, w, out):
    # compute: out = X_gpu @ w - y_gpu
    i = cuda.grid(1)

    n_samples, n_features = X_gpu.shape
    if i >= n_samples:
        return

    tmp = 0.
    for j in range(n_features):
        tmp += X_gpu[i, j] * w[j]
    tmp -= y_gpu[i]

    out[i] = tmp


@cuda.jit
def _compute_grad(X_gpu, minus_residual, out):
    # compute: out = X.T @ minus_residual
    j = cuda.grid(1)

    n_samples, n_features = X_gpu.shape
    if j >= n_features:
        return

    tmp = 0.
    for i in range(n_samples):
        tmp += X_gpu[i, j] * minus_residual[i]

    out[j] = tmp


@cuda.jit
def _forward_backward(mid_w, grad, step, lmbd, out):
    # forward: mid_w = mid_w - step * grad
    # backward: w = ST_vec(mid_w, step * lmbd)
    j = cuda.grid(1)

    n_features = len(mid_w)
    if j >= n_features:
        return

    # forward
    tmp = mid_w[j] - step * grad[j]

    # backward
    level = step * lmbd
    if abs(tmp) <= level:
        tmp = 0.
    elif tmp > level:
        tmp = tmp - level
    else:
        tmp = tmp + level

    out[j] = tmp


@cuda.jit
def _extrapolate(w, old_w, coef, out):
    # compute: out = w + coef * (w - old_w)
    j = cuda.grid(1)

    n_features = len(w)
    if j >= n_features:
        return

    out[j] = w[j] + coef * (w[j] - old_w[j])
