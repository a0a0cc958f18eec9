"""Public kernels: PyLops' numba.cuda kernels for the Kirchhoff demigration / migration operator:
travel-time-only (kinematic) and amplitude-weighted (dynamic) forward and adjoint, each a 2-D grid over
sources and receivers looping over image points, with linear interpolation in time between two
samples (cuda.atomic.add at (row, itravii) and (row, itravii + 1)), angle and aperture tapers read
from a table at int(20 * (...) // d), chained comparisons `0 <= itravii < nt - 1`.

Repository: https://github.com/PyLops/pylops (commit cca7184e80da3af1ec27173df7905b676799ec23)
Path: pylops/waveeqprocessing/_kirchhoff_cuda.py
Licence: LGPL-3.0 (LICENSE.md of the repository: GNU Lesser General Public License, version 3; PyLops
Copyright (c) the PyLops developers). This file is distributed under the same licence.
Edits: none to the kernel bodies. Upstream the four kernels are `@staticmethod @cuda.jit` members of
the class `_KirchhoffCudaHelper`; here they are the same functions at module level (dedented, the
`@staticmethod` line dropped) so that a case can name them. The rest of the class (grid setup,
streams, host calls) and the import of pylops.utils.backend are left out.
"""
from math import cos, fabs

from numba import cuda

@cuda.jit
def _travsrcrec_kirch_matvec_cuda(x, y, ns, nr, nt, ni, dt, trav_srcs, trav_recs):
    isrc, irec = cuda.grid(2)
    if ns > isrc and nr > irec:
        for ii in range(ni):
            travisrc = trav_srcs[ii, isrc]
            travirec = trav_recs[ii, irec]
            trav = travisrc + travirec
            itravii = int(trav / dt)
            travdii = trav / dt - itravii
            if 0 <= itravii < nt - 1:
                ind1 = (isrc * nr + irec, itravii)
                val1 = x[ii] * (1 - travdii)
                ind2 = (isrc * nr + irec, itravii + 1)
                val2 = x[ii] * travdii
                cuda.atomic.add(y, ind1, val1)
                cuda.atomic.add(y, ind2, val2)

@cuda.jit
def _travsrcrec_kirch_rmatvec_cuda(x, y, ns, nr, nt, ni, dt, trav_srcs, trav_recs):
    isrc, irec = cuda.grid(2)
    if ns > isrc and nr > irec:
        for ii in range(ni):
            travisrc = trav_srcs[ii, isrc]
            travirec = trav_recs[ii, irec]
            trav = travisrc + travirec
            itravii = int(trav / dt)
            travdii = trav / dt - itravii
            if 0 <= itravii < nt - 1:
                vii = (
                    x[isrc * nr + irec, itravii] * (1 - travdii)
                    + x[isrc * nr + irec, itravii + 1] * travdii
                )
                cuda.atomic.add(y, ii, vii)

@cuda.jit
def _ampsrcrec_kirch_matvec_cuda(
    x,
    y,
    ns,
    nr,
    nt,
    ni,
    dt,
    vel,
    trav_srcs,
    trav_recs,
    amp_srcs,
    amp_recs,
    aperturemin,
    aperturemax,
    aperturetap,
    nz,
    six,
    rix,
    angleaperturemin,
    angleaperturemax,
    angles_srcs,
    angles_recs,
):
    daperture = aperturemax - aperturemin
    dangleaperture = angleaperturemax - angleaperturemin

    isrc, irec = cuda.grid(2)
    if ns > isrc and nr > irec:
        for ii in range(ni):
            sixisrcrec = six[isrc * nr + irec]
            rixisrcrec = rix[isrc * nr + irec]
            travisrc = trav_srcs[ii, isrc]
            travirec = trav_recs[ii, irec]
            trav = travisrc + travirec
            itravii = int(trav / dt)
            travdii = trav / dt - itravii
            ampisrc = amp_srcs[ii, isrc]
            ampirec = amp_recs[ii, irec]
            # extract source and receiver angle at given image point
            angle_src = angles_srcs[ii, isrc]
            angle_rec = angles_recs[ii, irec]
            abs_angle_src = fabs(angle_src)
            abs_angle_rec = fabs(angle_rec)
            # compute cosine of half opening angle and total amplitude scaling
            cosangle = cos((angle_src - angle_rec) / 2.0)
            damp = 2.0 * cosangle * ampisrc * ampirec / vel[ii]
            # identify z-index of image point
            iz = ii % nz
            # angle apertures checks
            aptap = 1.0
            if (
                abs_angle_src < angleaperturemax
                and abs_angle_rec < angleaperturemax
            ):
                if abs_angle_src >= angleaperturemin:
                    # extract source angle aperture taper value
                    aptap = (
                        aptap
                        * aperturetap[
                            int(
                                20
                                * (abs_angle_src - angleaperturemin)
                                // dangleaperture
                            )
                        ]
                    )
                if abs_angle_rec >= angleaperturemin:
                    # extract receiver angle aperture taper value
                    aptap = (
                        aptap
                        * aperturetap[
                            int(
                                20
                                * (abs_angle_rec - angleaperturemin)
                                // dangleaperture
                            )
                        ]
                    )

                # aperture check
                aperture = abs(sixisrcrec - rixisrcrec) / (iz + 1)
                if aperture < aperturemax:
                    if aperture >= aperturemin:
                        # extract aperture taper value
                        aptap = (
                            aptap
                            * aperturetap[
                                int(20 * ((aperture - aperturemin) // daperture))
                            ]
                        )
                    # time limit check
                    if 0 <= itravii < nt - 1:
                        ind1 = (isrc * nr + irec, itravii)
                        val1 = x[ii] * (1 - travdii) * damp * aptap
                        ind2 = (isrc * nr + irec, itravii + 1)
                        val2 = x[ii] * travdii * damp * aptap
                        cuda.atomic.add(y, ind1, val1)
                        cuda.atomic.add(y, ind2, val2)

@cuda.jit
def _ampsrcrec_kirch_rmatvec_cuda(
    x,
    y,
    ns,
    nr,
    nt,
    ni,
    dt,
    vel,
    trav_srcs,
    trav_recs,
    amp_srcs,
    amp_recs,
    aperturemin,
    aperturemax,
    aperturetap,
    nz,
    six,
    rix,
    angleaperturemin,
    angleaperturemax,
    angles_srcs,
    angles_recs,
):
    daperture = aperturemax - aperturemin
    dangleaperture = angleaperturemax - angleaperturemin

    isrc, irec = cuda.grid(2)
    if ns > isrc and nr > irec:
        for ii in range(ni):
            sixisrcrec = six[isrc * nr + irec]
            rixisrcrec = rix[isrc * nr + irec]
            travisrc = trav_srcs[ii, isrc]
            travirec = trav_recs[ii, irec]
            trav = travisrc + travirec
            itravii = int(trav / dt)
            travdii = trav / dt - itravii
            ampisrc = amp_srcs[ii, isrc]
            ampirec = amp_recs[ii, irec]
            # extract source and receiver angle at given image point
            angle_src = angles_srcs[ii, isrc]
            angle_rec = angles_recs[ii, irec]
            abs_angle_src = fabs(angle_src)
            abs_angle_rec = fabs(angle_rec)
            # compute cosine of half opening angle and total amplitude scaling
            cosangle = cos((angle_src - angle_rec) / 2.0)
            damp = 2.0 * cosangle * ampisrc * ampirec / vel[ii]
            # identify z-index of image point
            iz = ii % nz
            # angle apertures checks
            aptap = 1.0
            if (
                abs_angle_src < angleaperturemax
                and abs_angle_rec < angleaperturemax
            ):
                if abs_angle_src >= angleaperturemin:
                    # extract source angle aperture taper value
                    aptap = (
                        aptap
                        * aperturetap[
                            int(
                                20
                                * (abs_angle_src - angleaperturemin)
                                // dangleaperture
                            )
                        ]
                    )
                if abs_angle_rec >= angleaperturemin:
                    # extract receiver angle aperture taper value
                    aptap = (
                        aptap
                        * aperturetap[
                            int(
                                20
                                * (abs_angle_rec - angleaperturemin)
                                // dangleaperture
                            )
                        ]
                    )

                # aperture check
                aperture = abs(sixisrcrec - rixisrcrec) / (iz + 1)
                if aperture < aperturemax:
                    if aperture >= aperturemin:
                        # extract aperture taper value
                        aptap = (
                            aptap
                            * aperturetap[
                                int(20 * ((aperture - aperturemin) // daperture))
                            ]
                        )
                    # time limit check
                    if 0 <= itravii < nt - 1:
                        ind1 = ii
                        val1 = (
                            (
                                x[isrc * nr + irec, itravii] * (1 - travdii)
                                + x[isrc * nr + irec, itravii + 1] * travdii
                            )
                            * damp
                            * aptap
                        )
                        cuda.atomic.add(y, ind1, val1)
