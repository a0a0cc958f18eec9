"""Public kernels: pylabolt, a 2-D lattice Boltzmann solver, its numba.cuda kernels: BGK collision
with second-order Guo forcing, density and velocity moments (rows of the populations), the
equilibrium initialisation through a device function, streaming with bounce-back at solid nodes,
and the residue's shared-memory tree reductions (a while loop whose stride halves).

Repository: https://github.com/Malyadeep/pylabolt (commit 1872e9dbe6f8ac06386556b7feb9fceb0c317691)
Licence: BSD-3-Clause (LICENSE of the repository: "Copyright (c) 2024, Malyadeep Bhattacharya")
Paths: pylabolt/parallel/gpu/collision_kernels.py, compute_fields_kernels.py,
equilibrium_kernels.py, streaming_kernels.py, compute_residues_kernels.py (one section each, marked
below)
Edits: none to the kernels. Only the kernels and the device function they call are copied.
compute_residues_kernels.py imports REDUCE_BLOCK_SIZE from pylabolt/parallel/backend.py; that
module's line `REDUCE_BLOCK_SIZE = 256` is copied here in place of the import.

Redistribution and use in source and binary forms, with or without modification, are permitted
provided that the following conditions are met: 1. Redistributions of source code must retain the
above copyright notice, this list of conditions and the following disclaimer. 2. Redistributions in
binary form must reproduce the above copyright notice, this list of conditions and the following
disclaimer in the documentation and/or other materials provided with the distribution. 3. Neither
the name of the copyright holder nor the names of its contributors may be used to endorse or
promote products derived from this software without specific prior written permission.
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
IMPLIED WARRANTIES ARE DISCLAIMED.
"""
from numba import cuda
from numba import float64

# pylabolt/parallel/backend.py
REDUCE_BLOCK_SIZE = 256


# ---- pylabolt/parallel/gpu/collision_kernels.py


@cuda.jit
def BGK_density_based_second_order_guo_second_order(
    size,
    cx,
    cy,
    weights,
    no_of_directions,
    inv_cs_2,
    inv_cs_4,
    solid,
    ghost_node,
    density,
    velocity,
    force_field,
    pop,
    pop_new,
    omega
):
    """
    Collision kernel for single phase flow
    for density based equilibrium distributions
    with second order Guo forcing
    Args:

    Returns:

    """
    ind = cuda.grid(1)
    if ind < size:
        if not solid[ind] and not ghost_node[ind]:
            density_local = density[ind]
            velocity_local_x = velocity[ind, 0]
            velocity_local_y = velocity[ind, 1]
            force_local_x = force_field[ind, 0]
            force_local_y = force_field[ind, 1]
            u2 = (velocity_local_x * velocity_local_x +
                  velocity_local_y * velocity_local_y)
            for k in range(no_of_directions):
                cu = cx[k] * velocity_local_x + cy[k] * velocity_local_y
                pop_eq = weights[k] * density_local * (
                    1 + inv_cs_2 * cu + 0.5 * inv_cs_4 * cu * cu -
                    0.5 * inv_cs_2 * u2
                )
                const_x = (cx[k] - velocity_local_x) * inv_cs_2 +\
                    cu * cx[k] * inv_cs_4
                const_y = (cy[k] - velocity_local_y) * inv_cs_2 +\
                    cu * cy[k] * inv_cs_4
                force_term = weights[k] * (
                    const_x * force_local_x + const_y * force_local_y
                )
                pop[ind, k] = (
                    (1 - omega) * pop_new[ind, k] +
                    omega * pop_eq +
                    (1 - 0.5 * omega) * force_term
                )


# ---- pylabolt/parallel/gpu/compute_fields_kernels.py


@cuda.jit
def density_compute_density_based(
    size,
    no_of_directions,
    solid,
    ghost_node,
    density,
    pop_new
):
    """
    Kernel to compute density and velocity from
    distributions
    Args:

    Returns:

    """
    ind = cuda.grid(1)
    if ind < size:
        if not solid[ind] and not ghost_node[ind]:
            density_sum = 0.
            pop_local = pop_new[ind]
            for k in range(no_of_directions):
                density_sum += pop_local[k]
            density[ind] = density_sum


@cuda.jit
def velocity_compute_density_based(
    float_min,
    size,
    cx,
    cy,
    no_of_directions,
    solid,
    ghost_node,
    density,
    velocity,
    force_field,
    pop_new
):
    """
    Kernel to compute density and velocity from
    distributions
    Args:

    Returns:

    """
    ind = cuda.grid(1)
    if ind < size:
        if not solid[ind] and not ghost_node[ind]:
            velocity_x_sum = 0.
            velocity_y_sum = 0.
            pop_local = pop_new[ind]
            for k in range(no_of_directions):
                velocity_x_sum += cx[k] * pop_local[k]
                velocity_y_sum += cy[k] * pop_local[k]
            inv_density = 1 / (density[ind] + float_min)
            velocity[ind, 0] = velocity_x_sum * inv_density +\
                0.5 * force_field[ind, 0] * inv_density
            velocity[ind, 1] = velocity_y_sum * inv_density +\
                0.5 * force_field[ind, 1] * inv_density


# ---- pylabolt/parallel/gpu/equilibrium_kernels.py


@cuda.jit(device=True)
def equilibrium_density_based_second_order(
    weight,
    inv_cs_2,
    inv_cs_4,
    density_local,
    cu,
    u2
):
    """
    Equilibrium kernel for density based second order
    equilibrium distribution per lattice direction
    Args:

    Returns:

    """
    pop_local = weight * density_local * (
        1 + inv_cs_2 * cu + 0.5 * inv_cs_4 * cu * cu -
        0.5 * inv_cs_2 * u2
    )
    return pop_local


@cuda.jit
def initialize_pop_density_based_second_order(
    size,
    cx,
    cy,
    weights,
    no_of_directions,
    inv_cs_2,
    inv_cs_4,
    solid,
    ghost_node,
    density,
    velocity,
    pop,
    pop_new
):
    """
    Initialization of populations using density based
    second order equilibrium
    Args:

    Returns:

    """
    ind = cuda.grid(1)
    if ind < size:
        if not solid[ind] and not ghost_node[ind]:
            velocity_local_x = velocity[ind, 0]
            velocity_local_y = velocity[ind, 1]
            u2 = (velocity_local_x * velocity_local_x +
                  velocity_local_y * velocity_local_y)
            for k in range(no_of_directions):
                cu = cx[k] * velocity_local_x + cy[k] * velocity_local_y
                pop_eq = equilibrium_density_based_second_order(
                    weights[k],
                    inv_cs_2,
                    inv_cs_4,
                    density[ind],
                    cu,
                    u2
                )
                pop[ind, k] = pop_eq
                pop_new[ind, k] = pop_eq


# ---- pylabolt/parallel/gpu/streaming_kernels.py


@cuda.jit
def scalar_based_kernel(
    size,
    shape,
    cx,
    cy,
    weights,
    inv_list,
    no_of_directions,
    inv_cs_2,
    solid,
    ghost_node,
    density,
    velocity,
    pop,
    pop_new
):
    """
    Streaming kernel with scalar during bounce-back
    Args:

    Returns:

    """
    ind = cuda.grid(1)
    if ind < size:
        if not solid[ind] and not ghost_node[ind]:
            x = ind // shape[1]
            y = ind - x * shape[1]
            density_local = density[ind]
            pop_new[ind, 0] = pop[ind, 0]
            for k in range(1, no_of_directions):
                x_nb = x - cx[k]
                y_nb = y - cy[k]
                ind_nb = x_nb * shape[1] + y_nb
                if not solid[ind_nb]:
                    pop_new[ind, k] = pop[ind_nb, k]
                else:
                    k_inv = inv_list[k]
                    temp = 2 * weights[k_inv] * density_local * inv_cs_2 * (
                        cx[k_inv] * velocity[ind_nb, 0] +
                        cy[k_inv] * velocity[ind_nb, 1]
                    )
                    pop_new[ind, k] = pop[ind, k_inv] - temp


# ---- pylabolt/parallel/gpu/compute_residues_kernels.py


@cuda.jit
def compute_residue_scalar(
    size,
    solid,
    ghost_node,
    field,
    field_old,
    partial_numerator,
    partial_denominator
):
    """
    Kernel to compute residue for scalar fields
    Residues always accumulated in float64
    Args:

    Returns:

    """
    ind = cuda.grid(1)
    thread_idx = cuda.threadIdx.x
    block_idx = cuda.blockIdx.x
    block_dim = cuda.blockDim.x

    shared_numerator = cuda.shared.array(REDUCE_BLOCK_SIZE, float64)
    shared_denominator = cuda.shared.array(REDUCE_BLOCK_SIZE, float64)

    numerator = 0.
    denominator = 0.

    if ind < size:
        if not solid[ind] and not ghost_node[ind]:
            field_old_local = field_old[ind]
            field_local = field[ind]
            diff_field = field_local - field_old_local
            numerator = diff_field * diff_field
            denominator = field_old_local * field_old_local
            field_old[ind] = field_local

    shared_numerator[thread_idx] = numerator
    shared_denominator[thread_idx] = denominator

    cuda.syncthreads()

    stride = block_dim // 2
    while stride > 0:
        if thread_idx < stride:
            shared_numerator[thread_idx] +=\
                shared_numerator[thread_idx + stride]
            shared_denominator[thread_idx] +=\
                shared_denominator[thread_idx + stride]

        cuda.syncthreads()

        stride = stride // 2

    if thread_idx == 0:
        partial_numerator[block_idx] = shared_numerator[0]
        partial_denominator[block_idx] = shared_denominator[0]


@cuda.jit
def reduce_residue_scalar(
    partial_size,
    partial_numerator,
    partial_denominator
):
    """
    Reduction kernel to recursively compute residues
    Residues always accumulated in float64
    Args:

    Returns:

    """
    ind = cuda.grid(1)
    thread_idx = cuda.threadIdx.x
    block_idx = cuda.blockIdx.x
    block_dim = cuda.blockDim.x

    shared_numerator = cuda.shared.array(REDUCE_BLOCK_SIZE, float64)
    shared_denominator = cuda.shared.array(REDUCE_BLOCK_SIZE, float64)

    if ind < partial_size:
        shared_numerator[thread_idx] = partial_numerator[ind]
        shared_denominator[thread_idx] = partial_denominator[ind]
    else:
        shared_numerator[thread_idx] = 0.0
        shared_denominator[thread_idx] = 0.0

    cuda.syncthreads()

    stride = block_dim // 2
    while stride > 0:
        if thread_idx < stride:
            shared_numerator[thread_idx] +=\
                shared_numerator[thread_idx + stride]
            shared_denominator[thread_idx] +=\
                shared_denominator[thread_idx + stride]

        cuda.syncthreads()

        stride = stride // 2

    if thread_idx == 0:
        partial_numerator[block_idx] = shared_numerator[0]
        partial_denominator[block_idx] = shared_denominator[0]


