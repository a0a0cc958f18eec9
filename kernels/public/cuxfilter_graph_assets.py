"""Public kernels: cuxfilter (RAPIDS), the graph-edge kernels of its datashader charts: quadratic
Bezier curves for bundled edges (a grid-stride loop, a device function writing a curve into a row
`result[i, 0]` of a 3-D array, `result[i, 0, -1] = cp.nan` at a negative index, a branch on
`nodes.shape[1] == 5`) and straight edges as [src, dst, nan] rows.

Repository: https://github.com/rapidsai/cuxfilter (commit fc8aab2033fabcc4117272a0a4ca84029fe365eb)
Path: python/cuxfilter/charts/datashader/custom_extensions/graph_assets.py
Licence: Apache-2.0 (SPDX header of the file: "Copyright (c) 2020-2025, NVIDIA CORPORATION. All rights
reserved."; LICENSE of the repository)
Edits: none to the kernels or device functions. The imports: the kernels read `cp.nan` from cupy,
which is not installed here; `import numpy as cp` gives the same constant (numba folds both to a
NaN). cudf, dask_cudf and the host-side functions are left out.
"""
import numpy as cp  # upstream: import cupy as cp (only cp.nan is used by the kernels)
from numba import cuda


@cuda.jit(device=True)
def bezier(start, end, control_point, steps, result):
    for i in range(steps.shape[0]):
        result[i] = (
            start * (1 - steps[i]) ** 2
            + 2 * (1 - steps[i]) * steps[i] * control_point
            + end * steps[i] ** 2
        )


@cuda.jit(device=True)
def add_aggregate_col(aggregate_col, steps, result):
    for i in range(steps.shape[0]):
        result[i] = aggregate_col


@cuda.jit
def compute_curves(nodes, control_points, result, steps):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)

    for i in range(start, nodes.shape[0], stride):
        v1_x = nodes[i, 0]
        v1_y = nodes[i, 1]
        v2_x = nodes[i, 2]
        v2_y = nodes[i, 3]

        bezier(v1_x, v2_x, control_points[i, 0], steps, result[i, 0])
        result[i, 0, -1] = cp.nan
        bezier(v1_y, v2_y, control_points[i, 1], steps, result[i, 1])
        result[i, 1, -1] = cp.nan
        if nodes.shape[1] == 5:
            add_aggregate_col(nodes[i, 4], steps, result[i, 2])


@cuda.jit
def connect_edges(edges, result):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, edges.shape[0], stride):
        result[i, 0, 0] = edges[i, 0]
        result[i, 0, 1] = edges[i, 2]
        result[i, 0, 2] = cp.nan
        result[i, 1, 0] = edges[i, 1]
        result[i, 1, 1] = edges[i, 3]
        result[i, 1, 2] = cp.nan
        if edges.shape[1] == 5:
            result[i, 2, 0] = edges[i, 4]
            result[i, 2, 1] = edges[i, 4]
            result[i, 2, 2] = cp.nan
