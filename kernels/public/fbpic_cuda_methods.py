"""Public kernels: FBPIC (Fourier-Bessel Particle-In-Cell), its real-valued numba.cuda kernels: the
particle pushers (a Vay pusher written as a plain Python function, made a device function with
`cuda.jit(f, device=True, inline=True)`, returning a 4-tuple unpacked into four array elements), the
photon density of a Compton-scattering laser pulse, the guard-cell buffer copies and adds between
subdomains (bool flags, `Nz, Nr = grid_r.shape`), the absorbing-boundary damping and the division by
the cell volume.

Repository: https://github.com/fbpic/fbpic (commit 3e9f181e6cbfdd7830060bbe541a046d80ff3c45)
Licence: BSD-3-Clause-LBNL (LICENSE.txt of the repository: "Fourier-Bessel Particle-In-Cell (FBPIC)",
Copyright (c) 2016, University of Hamburg and The Regents of the University of California, through
Lawrence Berkeley National Laboratory)
Paths: fbpic/particles/push/inline_functions.py (push_p_vay), fbpic/particles/push/cuda_methods.py
(push_x_gpu, push_p_gpu, push_p_after_plane_gpu, push_p_ioniz_gpu),
fbpic/particles/elementary_process/compton/inline_functions.py (get_photon_density_gaussian),
fbpic/particles/elementary_process/compton/cuda_methods.py (get_photon_density_gaussian_cuda),
fbpic/boundaries/cuda_methods.py (copy_vec_to_gpu_buffer, add_scal_from_gpu_buffer,
cuda_damp_EB_left, cuda_damp_EB_right), fbpic/fields/cuda_methods.py (cuda_divide_vector_by_volume)
Edits: none to the kernels or device functions. The imports: FBPIC decorates its kernels with
`compile_cupy` (fbpic/utils/cuda.py), which compiles the function with `cuda.jit` and launches the
PTX through cupy; cupy is not installed here, so `compile_cupy = cuda.jit` stands in. The constants
`c` and `e` come from scipy.constants, not installed here; their values (exact in SI since 2019) are
written in place of the import. The device functions are defined in this file above the
`cuda.jit(..., device=True, inline=True)` lines that upstream applies to them after importing them
from their module; a comment line `# ---- <path> ----` marks where each upstream file's part begins.
FBPIC's other kernels work on complex fields or particle sorting and are left out.

Redistribution and use in source and binary forms, with or without modification, are permitted
provided that the following conditions are met: (1) Redistributions of source code must retain the
above copyright notice, this list of conditions and the following disclaimer. (2) Redistributions in
binary form must reproduce the above copyright notice, this list of conditions and the following
disclaimer in the documentation and/or other materials provided with the distribution. (3) Neither
the name of the University of Hamburg, University of California, Lawrence Berkeley National
Laboratory, U.S. Dept. of Energy nor the names of its contributors may be used to endorse or promote
products derived from this software without specific prior written permission.
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
IMPLIED WARRANTIES ARE DISCLAIMED.
"""
import math
from numba import cuda

compile_cupy = cuda.jit       # edit: stands in for fbpic.utils.cuda.compile_cupy (see above)
c = 299792458.0               # edit: scipy.constants.c
e = 1.602176634e-19           # edit: scipy.constants.e


# ---- fbpic/particles/push/inline_functions.py ----
def push_p_vay( ux_i, uy_i, uz_i, inv_gamma_i,
    Ex, Ey, Ez, Bx, By, Bz, econst, bconst ):
    """
    Push at single macroparticle, using the Vay pusher
    """
    # Get the magnetic rotation vector
    taux = bconst*Bx
    tauy = bconst*By
    tauz = bconst*Bz
    tau2 = taux**2 + tauy**2 + tauz**2

    # Get the momenta at the half timestep
    uxp = ux_i + econst*Ex \
    + inv_gamma_i*( uy_i*tauz - uz_i*tauy )
    uyp = uy_i + econst*Ey \
    + inv_gamma_i*( uz_i*taux - ux_i*tauz )
    uzp = uz_i + econst*Ez \
    + inv_gamma_i*( ux_i*tauy - uy_i*taux )
    sigma = 1 + uxp**2 + uyp**2 + uzp**2 - tau2
    utau = uxp*taux + uyp*tauy + uzp*tauz

    # Get the new 1./gamma
    inv_gamma_f = math.sqrt(
        2./( sigma + math.sqrt( sigma**2 + 4*(tau2 + utau**2 ) ) ) )

    # Reuse the tau and utau arrays to save memory
    tx = inv_gamma_f*taux
    ty = inv_gamma_f*tauy
    tz = inv_gamma_f*tauz
    ut = inv_gamma_f*utau
    s = 1./( 1 + tau2*inv_gamma_f**2 )

    # Get the new u
    ux_f = s*( uxp + tx*ut + uyp*tz - uzp*ty )
    uy_f = s*( uyp + ty*ut + uzp*tx - uxp*tz )
    uz_f = s*( uzp + tz*ut + uxp*ty - uyp*tx )

    return( ux_f, uy_f, uz_f, inv_gamma_f )


# ---- fbpic/particles/push/cuda_methods.py ----
# Compile the inline function for GPU
push_p_vay = cuda.jit( push_p_vay, device=True, inline=True )

@compile_cupy
def push_x_gpu( x, y, z, ux, uy, uz, inv_gamma, dt,
                x_push, y_push, z_push ) :
    """
    Advance the particles' positions over `dt` using the momenta ux, uy, uz,
    multiplied by the scalar coefficients x_push, y_push, z_push.

    Parameters
    ----------
    x, y, z : 1darray of floats (in meters)
        The position of the particles
        (is modified by this function)

    ux, uy, uz : 1darray of floats (in meters * second^-1)
        The velocity of the particles

    inv_gamma : 1darray of floats
        The inverse of the relativistic gamma factor

    dt : float (seconds)
        The timestep by which the position is advanced

    x_push, y_push, z_push: float, dimensionless
        Multiplying coefficient for the momenta in x, y and z
        e.g. if x_push=1., the particles are pushed forward in x
             if x_push=-1., the particles are pushed backward in x
    """
    # Timestep multiplied by c
    cdt = c*dt

    i = cuda.grid(1)
    if i < x.shape[0]:
        # Particle push
        inv_g = inv_gamma[i]
        x[i] += cdt*x_push*inv_g*ux[i]
        y[i] += cdt*y_push*inv_g*uy[i]
        z[i] += cdt*z_push*inv_g*uz[i]

@compile_cupy
def push_p_gpu( ux, uy, uz, inv_gamma,
                Ex, Ey, Ez, Bx, By, Bz,
                q, m, Ntot, dt ) :
    """
    Advance the particles' momenta, using cuda on the GPU

    Parameters
    ----------
    ux, uy, uz : 1darray of floats
        The velocity of the particles
        (is modified by this function)

    inv_gamma : 1darray of floats
        The inverse of the relativistic gamma factor

    Ex, Ey, Ez : 1darray of floats
        The electric fields acting on the particles

    Bx, By, Bz : 1darray of floats
        The magnetic fields acting on the particles

    q : float
        The charge of the particle species

    m : float
        The mass of the particle species

    Ntot : int
        The total number of particles

    dt : float
        The time by which the momenta is advanced
    """
    # Set a few constants
    econst = q*dt/(m*c)
    bconst = 0.5*q*dt/m

    #Cuda 1D grid
    ip = cuda.grid(1)

    # Loop over the particles
    if ip < Ntot:
        ux[ip], uy[ip], uz[ip], inv_gamma[ip] = push_p_vay(
            ux[ip], uy[ip], uz[ip], inv_gamma[ip],
            Ex[ip], Ey[ip], Ez[ip], Bx[ip], By[ip], Bz[ip], econst, bconst)


@compile_cupy
def push_p_after_plane_gpu( z, z_plane, ux, uy, uz, inv_gamma,
                Ex, Ey, Ez, Bx, By, Bz, q, m, Ntot, dt ) :
    """
    Advance the particles' momenta, using cuda on the GPU.
    Only the particles that are located beyond the plane z=z_plane
    have their momentum modified ; the others particles move ballistically.

    Parameters
    ----------
    z: 1darray of floats
        The position of the particles in the z direction

    z_plane: float
        Position beyond which the particles should be

    For the other parameters, see the docstring of push_p_gpu
    """
    # Set a few constants
    econst = q*dt/(m*c)
    bconst = 0.5*q*dt/m

    # Cuda 1D grid
    ip = cuda.grid(1)

    # Loop over the particles
    if ip < Ntot and z[ip] > z_plane:
        ux[ip], uy[ip], uz[ip], inv_gamma[ip] = push_p_vay(
            ux[ip], uy[ip], uz[ip], inv_gamma[ip],
            Ex[ip], Ey[ip], Ez[ip], Bx[ip], By[ip], Bz[ip], econst, bconst)


@compile_cupy
def push_p_ioniz_gpu( ux, uy, uz, inv_gamma,
                Ex, Ey, Ez, Bx, By, Bz,
                m, Ntot, dt, ionization_level ) :
    """
    Advance the particles' momenta, using numba on the GPU
    This take into account that the particles are ionizable, and thus
    that their charge is determined by `ionization_level`

    Parameters
    ----------
    ionization_level : 1darray of ints
        The number of electrons that each ion is missing
        (compared to a neutral atom)

    For the other parameters, see the docstring of push_p_gpu
    """
    #Cuda 1D grid
    ip = cuda.grid(1)

    # Loop over the particles
    if ip < Ntot:
        if ionization_level[ip] != 0:
            # Set a few constants
            econst = ionization_level[ip] * e * dt/(m*c)
            bconst = 0.5 * ionization_level[ip] * e * dt/m
            # Use the Vay pusher
            ux[ip], uy[ip], uz[ip], inv_gamma[ip] = push_p_vay(
                ux[ip], uy[ip], uz[ip], inv_gamma[ip],
                Ex[ip], Ey[ip], Ez[ip], Bx[ip], By[ip], Bz[ip], econst, bconst)


# ---- fbpic/particles/elementary_process/compton/inline_functions.py ----
def get_photon_density_gaussian(
    elec_x, elec_y, elec_z, ct, photon_n_lab_max, inv_laser_waist2,
    inv_laser_ctau2, laser_initial_z0, gamma_boost, beta_boost ):
    """
    Get the photon density in the scattering Gaussian laser pulse,
    at the position of a given electron, and at the current time.

    Parameters
    ----------
    elec_x, elec_y, elec_z: floats
        The position of the given electron (in the frame of the simulation)
    ct: float
        Current time in the simulation frame (multiplied by c)
    photon_n_lab_max: float
        Peak photon density (in the lab frame)
        (i.e. at the peak of the Gaussian pulse)
    inv_laser_waist2, inv_laser_ctau2, laser_initial_z0: floats
        Properties of the Gaussian laser pulse (in the lab frame)
    gamma_boost, beta_boost: floats
        Properties of the Lorentz boost between the lab and simulation frame.

    Returns
    -------
    photon_n_sim: float
        The photon density in the frame of the simulation
    """
    # Transform electrons coordinates from simulation frame to lab frame
    elec_zlab = gamma_boost*( elec_z + beta_boost*ct )
    elec_ctlab = gamma_boost*( ct + beta_boost*elec_z )

    # Get photon density *in the lab frame*
    photon_n_lab = photon_n_lab_max * math.exp(
        - 2*inv_laser_waist2*( elec_x**2 + elec_y**2 ) \
        - 2*inv_laser_ctau2*(elec_zlab - laser_initial_z0 + elec_ctlab)**2 )

    # Get photon density *in the simulation frame*
    photon_n_sim = gamma_boost*photon_n_lab*( 1 + beta_boost)

    return( photon_n_sim )


# ---- fbpic/particles/elementary_process/compton/cuda_methods.py ----
get_photon_density_gaussian = cuda.jit( get_photon_density_gaussian,
                                            device=True, inline=True )

@compile_cupy
def get_photon_density_gaussian_cuda( photon_n, elec_Ntot,
    elec_x, elec_y, elec_z, ct, photon_n_lab_max, inv_laser_waist2,
    inv_laser_ctau2, laser_initial_z0, gamma_boost, beta_boost ):
    """
    Fill the array `photon_n` with the values of the photon density
    (in the simulation frame) in the scattering laser pulse, at
    the position of the electron macroparticles.

    Parameters
    ----------
    elec_x, elec_y, elec_z: 1d arrays of floats
        The position of the electrons (in the frame of the simulation)
    ct: float
        Current time in the simulation frame (multiplied by c)
    photon_n_lab_max: float
        Peak photon density (in the lab frame)
        (i.e. at the peak of the Gaussian pulse)
    inv_laser_waist2, inv_laser_ctau2, laser_initial_z0: floats
        Properties of the Gaussian laser pulse (in the lab frame)
    gamma_boost, beta_boost: floats
        Properties of the Lorentz boost between the lab and simulation frame.
    """
    # Loop over electrons
    i_elec = cuda.grid(1)
    if i_elec < elec_Ntot:

        photon_n[i_elec] = get_photon_density_gaussian(
            elec_x[i_elec], elec_y[i_elec], elec_z[i_elec], ct,
            photon_n_lab_max, inv_laser_waist2, inv_laser_ctau2,
            laser_initial_z0, gamma_boost, beta_boost )



# ---- fbpic/boundaries/cuda_methods.py ----
@compile_cupy
def copy_vec_to_gpu_buffer( vec_buffer_l, vec_buffer_r,
                            grid_r, grid_t, grid_z, m,
                            copy_left, copy_right, nz_start, nz_end ):
    """
    Copy the ng inner domain cells of grid_r, ..., grid_z
    to the GPU buffer vec_buffer_l and vec_buffer_r.

    Parameters
    ----------
    vec_buffer_l, vec_buffer_r: ndarrays of complexs (device arrays)
        Arrays of shape (3*Nm, nz_end-nz_start, Nr), which serve as buffer
        for transmission to CPU, and then sending via MPI. They hold the
        values of a vector field in either the ng inner cells of the domain
        or the ng outer + ng inner cells of the domain, to the left and right.

    grid_r, grid_t, grid_z: ndarrays of complexs (device arrays)
        Arrays of shape (Nz, Nr), which contain the different component
        of the vector field (r, t, z), in the mode m

    m: int
        The index of the azimuthal mode involved

    copy_left, copy_right: bool
        Whether to copy the buffers to the left and right of the local domain
        (Buffers are not copied at the left end and right end of the
        global simulation box.)

    nz_start: int
        The start index in z, of the cell region which is copied to the
        buffers. The start is defined as an offset from the most outer cell
        on either the left or the right side of the enlarged domain.

    nz_end: int
        The end index in z, of the cell region which is copied to the
        buffers. The end is defined as an offset from the most outer cell
        on either the left or the right side of the enlarged domain.
    """
    # Dimension of the arrays
    Nz, Nr = grid_r.shape

    # Obtain Cuda grid
    iz, ir = cuda.grid(2)

    # Copy the inner regions of the domain to the buffer
    if ir < Nr:
        if iz < (nz_end - nz_start):
            # At the left end
            if copy_left:
                iz_left = nz_start + iz
                vec_buffer_l[3*m+0, iz, ir] = grid_r[ iz_left, ir ]
                vec_buffer_l[3*m+1, iz, ir] = grid_t[ iz_left, ir ]
                vec_buffer_l[3*m+2, iz, ir] = grid_z[ iz_left, ir ]
            # At the right end
            if copy_right:
                iz_right = Nz - nz_end + iz
                vec_buffer_r[3*m+0, iz, ir] = grid_r[ iz_right, ir ]
                vec_buffer_r[3*m+1, iz, ir] = grid_t[ iz_right, ir ]
                vec_buffer_r[3*m+2, iz, ir] = grid_z[ iz_right, ir ]


@compile_cupy
def add_scal_from_gpu_buffer( scal_buffer_l, scal_buffer_r, grid, m,
                              copy_left, copy_right, nz_start, nz_end ):
    """
    Add the the GPU buffer scal_buffer_l and scal_buffer_r
    to the scalar field grids, grid_r, ..., grid_z.

    Parameters
    ----------
    scal_buffer_l, scal_buffer_r: ndarrays of complexs (device arrays)
        Arrays of shape (Nm, nz_end-nz_start, Nr), which are the buffers
        sent via MPI and received by the CPU.

    grid: ndarray of complexs (device arrays)
        Arrays of shape (Nz, Nr), which contain the mode m of the scalar field.

    m: int
        The index of the azimuthal mode involved

    copy_left, copy_right: bool
        Whether to copy the buffers to the left and right of the local domain
        (Buffers are not copied at the left end and right end of the
        global simulation box.)

    nz_start: int
        The start index in z, of the cell region which is copied to the
        buffers. The start is defined as an offset from the most outer cell
        on either the left or the right side of the enlarged domain.

    nz_end: int
        The end index in z, of the cell region which is copied to the
        buffers. The end is defined as an offset from the most outer cell
        on either the left or the right side of the enlarged domain.
    """
    # Dimension of the arrays
    Nz, Nr = grid.shape

    # Obtain Cuda grid
    iz, ir = cuda.grid(2)

    # Copy the inner regions of the domain to the buffer
    if ir < Nr:
        if iz < (nz_end - nz_start):
            # At the left end
            if copy_left:
                iz_left = iz
                grid[ iz_left, ir ] += scal_buffer_l[m, iz, ir]
            # At the right end
            if copy_right:
                iz_right = Nz - (nz_end - nz_start) + iz
                grid[ iz_right, ir ] += scal_buffer_r[m, iz, ir]

# CUDA damping kernels:
# --------------------
@compile_cupy
def cuda_damp_EB_left( Er, Et, Ez, Br, Bt, Bz, damp_array, nd ):
    """
    Multiply the E and B fields in the left guard cells
    by damp_array.

    Parameters :
    ------------
    Er, Et, Ez, Br, Bt, Bz: 2darrays of complexs
        Contain the fields to be damped
        The first axis corresponds to z and the second to r

    damp_array : 1darray of floats
        An array of length n_guard+nz_damp+n_inject,
        which contains the damping factors.

    nd: int
        Number of damping and guard cells
    """
    # Obtain Cuda grid
    iz, ir = cuda.grid(2)

    # Obtain the size of the array along z and r
    Nz, Nr = Er.shape

    # Modify the fields
    if ir < Nr :
        # Apply the damping arrays
        if iz < nd:
            damp_factor_left = damp_array[iz]

            # At the left end
            Er[iz, ir] *= damp_factor_left
            Et[iz, ir] *= damp_factor_left
            Ez[iz, ir] *= damp_factor_left
            Br[iz, ir] *= damp_factor_left
            Bt[iz, ir] *= damp_factor_left
            Bz[iz, ir] *= damp_factor_left

@compile_cupy
def cuda_damp_EB_right( Er, Et, Ez, Br, Bt, Bz, damp_array, nd ):
    """
    Multiply the E and B fields in the right guard cells
    by damp_array.

    Parameters :
    ------------
    Er, Et, Ez, Br, Bt, Bz : 2darrays of complexs
        Contain the fields to be damped
        The first axis corresponds to z and the second to r

    damp_array : 1darray of floats
        An array of length n_guard+nz_damp+n_inject,
        which contains the damping factors.

    nd: int
        Number of damping and guard cells
    """
    # Obtain Cuda grid
    iz, ir = cuda.grid(2)

    # Obtain the size of the array along z and r
    Nz, Nr = Er.shape

    # Modify the fields
    if ir < Nr :
        # Apply the damping arrays
        if iz < nd:
            damp_factor_right = damp_array[iz]

            # At the right end
            iz_right = Nz - iz - 1
            Er[iz_right, ir] *= damp_factor_right
            Et[iz_right, ir] *= damp_factor_right
            Ez[iz_right, ir] *= damp_factor_right
            Br[iz_right, ir] *= damp_factor_right
            Bt[iz_right, ir] *= damp_factor_right
            Bz[iz_right, ir] *= damp_factor_right



# ---- fbpic/fields/cuda_methods.py ----
@compile_cupy
def cuda_divide_vector_by_volume( array_r, array_t, array_z, invvol ):
    """
    Multiply the input arrays by the corresponding invvol

    Parameters:
    ------------
    array_r, array_t, array_z: 2darrays of complexs
       Arrays that represent the fields on the grid
       (The first axis corresponds to z and the second axis to r)

    invvol: 1darray of floats
       Arrays that contain the inverse of the volume of the cell
       The axis corresponds to r
    """

    # Cuda 2D grid
    iz, ir = cuda.grid(2)

    # Multiply by inverse volume
    if (iz < array_r.shape[0]) and (ir < array_r.shape[1]):
        array_r[iz, ir] = array_r[iz, ir] * invvol[ir]
        array_t[iz, ir] = array_t[iz, ir] * invvol[ir]
        array_z[iz, ir] = array_z[iz, ir] * invvol[ir]

