"""Public kernels: dpbench (Intel's data-parallel benchmark suite), its numba.cuda implementations:
Black-Scholes with `math.erf` and `dtype.type(...)` casts, the weighted pair counts of gpairs (a
histogram walked backwards with `break`, then a prefix sum over the bins) and their aggregation, a
k-nearest-neighbours vote (a local array used as an insertion-sorted queue, `while` loops,
`queue[k - 1][0]`-style chained indexing, `len` of a local array), the row-wise L2 norm accumulated
in the output element, the pairwise distance matrix (`cuda.grid(2)`) and the RAMBO phase-space
generator (a 3-D output written in a loop).

Repository: https://github.com/IntelPython/dpbench (commit 0b59bd251543e0e3ab6dc53c07f694757d32f3b3)
Licence: Apache-2.0 (LICENSE of the repository; each file: "SPDX-FileCopyrightText: 2022 - 2023
Intel Corporation, SPDX-License-Identifier: Apache-2.0")
Paths: dpbench/benchmarks/default/<name>/<name>_numba_cuda.py for black_scholes, gpairs, knn,
l2_norm, pairwise_distance and rambo (a comment line `# ---- <path> ----` marks each file's part)
Edits: none to the kernels. Only the kernels are copied, not the host functions that launch them;
the files' `from math import ...` lines are merged into one, and `import cupy as cp` (used only by
the host functions of gpairs and knn) is left out.
"""
from math import ceil, cos, erf, exp, log, pi, sin, sqrt  # noqa: F401  (the six files' imports)

from numba import cuda


# ---- dpbench/benchmarks/default/black_scholes/black_scholes_numba_cuda.py ----
@cuda.jit
def _black_scholes_kernel(nopt, price, strike, t, rate, volatility, call, put):
    dtype = price.dtype
    mr = -rate
    sig_sig_two = volatility * volatility * dtype.type(2)

    i = cuda.grid(1)

    P = price[i]
    S = strike[i]
    T = t[i]

    a = log(P / S)
    b = T * mr

    z = T * sig_sig_two
    c = dtype.type(0.25) * z
    y = dtype.type(1.0) / sqrt(z)

    w1 = (a - b + c) * y
    w2 = (a - b - c) * y

    d1 = dtype.type(0.5) + dtype.type(0.5) * erf(w1)
    d2 = dtype.type(0.5) + dtype.type(0.5) * erf(w2)

    Se = exp(b) * S

    r = P * d1 - Se * d2
    call[i] = r
    put[i] = r - P + Se

# ---- dpbench/benchmarks/default/gpairs/gpairs_numba_cuda.py ----
@cuda.jit
def count_weighted_pairs_3d_diff_ker(
    n, nbins, x1, y1, z1, w1, x2, y2, z2, w2, rbins_squared, result
):
    i = cuda.grid(1)

    px = x1[i]
    py = y1[i]
    pz = z1[i]
    pw = w1[i]
    for j in range(n):
        qx = x2[j]
        qy = y2[j]
        qz = z2[j]
        qw = w2[j]
        dx = px - qx
        dy = py - qy
        dz = pz - qz
        wprod = pw * qw
        dsq = dx * dx + dy * dy + dz * dz

        if dsq <= rbins_squared[nbins - 1]:
            for k in range(nbins - 1, -1, -1):
                if dsq > rbins_squared[k]:
                    result[i, k + 1] += wprod
                    break
                if k == 0:
                    result[i, k] += wprod
                    break

    for j in range(nbins - 2, -1, -1):
        for k in range(j + 1, nbins, 1):
            result[i, k] += result[i, j]


@cuda.jit
def count_weighted_pairs_3d_diff_agg_ker(nbins, result, n):
    col_id = cuda.grid(1)

    for i in range(1, n):
        result[0, col_id] += result[i, col_id]

# ---- dpbench/benchmarks/default/knn/knn_numba_cuda.py ----
@cuda.jit
def _knn_kernel(  # noqa: C901: TODO: can we simplify logic?
    train,
    train_labels,
    test,
    k,
    classes_num,
    train_size,
    predictions,
    votes_to_classes_lst,
    data_dim,
):
    dtype = train.dtype

    i = cuda.grid(1)

    # here k has to be 5 in order to match with numpy
    queue_neighbors = cuda.local.array(shape=(5, 2), dtype=dtype)

    for j in range(k):
        x1 = train[j]
        x2 = test[i]

        distance = dtype.type(0.0)
        for jj in range(data_dim):
            diff = x1[jj] - x2[jj]
            distance += diff * diff
        dist = sqrt(distance)

        queue_neighbors[j, 0] = dist
        queue_neighbors[j, 1] = train_labels[j]

    for j in range(k):
        new_distance = queue_neighbors[j, 0]
        new_neighbor_label = queue_neighbors[j, 1]
        index = j

        while index > 0 and new_distance < queue_neighbors[index - 1, 0]:
            queue_neighbors[index, 0] = queue_neighbors[index - 1, 0]
            queue_neighbors[index, 1] = queue_neighbors[index - 1, 1]

            index = index - 1

            queue_neighbors[index, 0] = new_distance
            queue_neighbors[index, 1] = new_neighbor_label

    for j in range(k, train_size):
        x1 = train[j]
        x2 = test[i]

        distance = dtype.type(0.0)
        for jj in range(data_dim):
            diff = x1[jj] - x2[jj]
            distance += diff * diff
        dist = sqrt(distance)

        if dist < queue_neighbors[k - 1][0]:
            queue_neighbors[k - 1][0] = dist
            queue_neighbors[k - 1][1] = train_labels[j]
            new_distance = queue_neighbors[k - 1, 0]
            new_neighbor_label = queue_neighbors[k - 1, 1]
            index = k - 1

            while index > 0 and new_distance < queue_neighbors[index - 1, 0]:
                queue_neighbors[index, 0] = queue_neighbors[index - 1, 0]
                queue_neighbors[index, 1] = queue_neighbors[index - 1, 1]

                index = index - 1

                queue_neighbors[index, 0] = new_distance
                queue_neighbors[index, 1] = new_neighbor_label

    votes_to_classes = votes_to_classes_lst[i]

    for j in range(len(queue_neighbors)):
        votes_to_classes[int(queue_neighbors[j, 1])] += 1

    max_ind = 0
    max_value = dtype.type(0)

    for j in range(classes_num):
        if votes_to_classes[j] > max_value:
            max_value = votes_to_classes[j]
            max_ind = j

    predictions[i] = max_ind

# ---- dpbench/benchmarks/default/l2_norm/l2_norm_numba_cuda.py ----
@cuda.jit
def l2_norm_kernel(a, d):
    i = cuda.grid(1)

    a_rows = a.shape[1]
    d[i] = 0.0
    for k in range(a_rows):
        d[i] += a[i, k] * a[i, k]
    d[i] = sqrt(d[i])

# ---- dpbench/benchmarks/default/pairwise_distance/pairwise_distance_numba_cuda.py ----
@cuda.jit
def _pairwise_distance_kernel(X1, X2, D):
    i, j = cuda.grid(2)

    X2_cols = X2.shape[1]

    d = X1.dtype.type(0.0)
    for k in range(X2_cols):
        tmp = X1[i, k] - X2[j, k]
        d += tmp * tmp
    D[i, j] = sqrt(d)

# ---- dpbench/benchmarks/default/rambo/rambo_numba_cuda.py ----
@cuda.jit
def _rambo(C1, F1, Q1, nout, output):
    dtype = C1.dtype
    i = cuda.grid(1)
    for j in range(nout):
        C = dtype.type(2.0) * C1[i, j] - dtype.type(1.0)
        S = sqrt(dtype.type(1) - C * C)
        F = dtype.type(2.0 * pi) * F1[i, j]
        Q = -log(Q1[i, j])

        output[i, j, 0] = Q
        output[i, j, 1] = Q * S * sin(F)
        output[i, j, 2] = Q * S * cos(F)
        output[i, j, 3] = Q * C
