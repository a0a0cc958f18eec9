"""Public kernel: numba-benchmark's CUDA n-body accelerations (GPU Gems 3 ch. 31 tile loop: shared
position tiles, two barriers per tile, device functions returning tuples).

Repository: https://github.com/numba/numba-benchmark (commit 6d682a7f849d5e92e2f33ec425e83d72dcc9a5ab)
Path: benchmarks/bench_cuda.py
Licence: BSD-2-Clause (LICENSE of the repository: Copyright (c) 2014, Continuum Analytics, Inc.)
Edits: the constants and the two device functions, defined inside _jit_setup1() and exported with
globals().update(locals()), are at module level; calculate_forces is at module level as in the
file, undecorated (the benchmark jits it with float32 argtypes; the harness jits it per dtype).
The code is unchanged.
"""
import math

import numpy as np

from numba import cuda, float32, float64

eps_2 = np.float32(1e-6)
zero = np.float32(0.0)
one = np.float32(1.0)


@cuda.jit(device=True, inline=True)
def body_body_interaction(xi, yi, xj, yj, wj, axi, ayi):
    """
    Compute the influence of body j on the acceleration of body i.
    """
    rx = xj - xi
    ry = yj - yi
    sqr_dist = rx * rx + ry * ry + eps_2
    sixth_dist = sqr_dist * sqr_dist * sqr_dist
    inv_dist_cube = one / math.sqrt(sixth_dist)
    s = wj * inv_dist_cube
    axi += rx * s
    ayi += ry * s
    return axi, ayi


@cuda.jit(device=True, inline=True)
def tile_calculation(xi, yi, axi, ayi, positions, weights):
    """
    Compute the contribution of this block's tile to the acceleration
    of body i.
    """
    for j in range(cuda.blockDim.x):
        xj = positions[j,0]
        yj = positions[j,1]
        wj = weights[j]
        axi, ayi = body_body_interaction(xi, yi, xj, yj, wj, axi, ayi)
    return axi, ayi


tile_size = 128

# Don't JIT this function at the top-level as it breaks until Numba 0.16.
def calculate_forces(positions, weights, accelerations):
    """
    Calculate accelerations produced on all bodies by mutual gravitational
    forces.
    """
    sh_positions = cuda.shared.array((tile_size, 2), float32)
    sh_weights = cuda.shared.array(tile_size, float32)
    i = cuda.grid(1)
    axi = 0.0
    ayi = 0.0
    xi = positions[i,0]
    yi = positions[i,1]
    for j in range(0, len(weights), tile_size):
        index = (j // tile_size) * cuda.blockDim.x + cuda.threadIdx.x
        sh_index = cuda.threadIdx.x
        sh_positions[sh_index,0] = positions[index,0]
        sh_positions[sh_index,1] = positions[index,1]
        sh_weights[sh_index] = weights[index]
        cuda.syncthreads()
        axi, ayi = tile_calculation(xi, yi, axi, ayi,
                                    sh_positions, sh_weights)
        cuda.syncthreads()
    accelerations[i,0] = axi
    accelerations[i,1] = ayi
