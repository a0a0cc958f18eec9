"""Public kernels: OpenFDTD's Python/numba.cuda FDTD electromagnetics solver: the Yee update of Ex
and Hx on a 3-D grid (cuda.grid(3) unpacked as k, j, i, a flattened index with strides Ni, Nj, Nk
and offset N0), the plane-wave update of Ex calling a device function through a package module
(`sol_cuda.planewave.f(...)`, returning a tuple), the field average with abs(), Mur's absorbing
boundary (a row of six integers unpacked), a PML update (a row of four integers unpacked, min/max
clamps, running split fields), a dispersive-medium update (rows sliced and unpacked), a lumped
inductor (a row slice bound to a name and updated through it), a point probe (an if/elif chain on a
direction index), a running DFT of Ex, and a periodic boundary copy on a 2-D grid.

Repository: https://github.com/mitsuboh/OpenFDTD_SYCL (commit d80a5f9bb9a49d96389c311e064d8a53c6138ded;
the python/sol_cuda files last changed in d88faa43778a5a340eec0b472c2c69762006465d). The repository
ports OpenFDTD (https://ss023804.stars.ne.jp/OpenFDTD/index.html) to SYCL and carries its Python solver.
Licence: MIT (LICENSE.txt of the repository: "Copyright (c) [2025] [Mitsuru Ikei]")
Paths: python/sol_cuda/updateEx.py, updateHx.py, average.py, MurH.py, PmlEx.py, DispEx.py,
inductor.py, pointV.py, Near3d.py, PbcX.py (one section each, marked below); python/sol_cuda/planewave.py is copied unedited as openfdtd_planewave.py.
Edits: none to the kernels. Only the kernels used by the cases are copied (the comments between the
functions and the host-side launch functions are left out). `import sol_cuda.planewave` is replaced
by loading openfdtd_planewave.py beside this file and binding it as the `planewave` attribute of a
module named `sol_cuda`, which is what that import binds (kernel files are loaded by path, not as a
package), so the kernels' `sol_cuda.planewave.f(...)` calls are unedited.

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions: The above copyright notice and this
permission notice shall be included in all copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""
import importlib.util
import math
import pathlib
import types

from numba import cuda

# edit: stands in for `import sol_cuda.planewave`
_spec = importlib.util.spec_from_file_location(
    "sol_cuda.planewave", pathlib.Path(__file__).with_name("openfdtd_planewave.py"))
sol_cuda = types.ModuleType("sol_cuda")
sol_cuda.planewave = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sol_cuda.planewave)


# ---- python/sol_cuda/updateEx.py
@cuda.jit(cache=True)
def _Ex_f_vector(
    Ex, Hy, Hz, K1Ex, K2Ex, RYn, RZn,
    iMin, iMax, jMin, jMax, kMin, kMax, Ni, Nj, Nk, N0):

    k, j, i = cuda.grid(3)
    i += iMin
    j += jMin
    k += kMin

    if (i < iMax + 0) and \
       (j < jMax + 1) and \
       (k < kMax + 1):
        n = (Ni * i) + (Nj * j) + (Nk * k) + N0
        Ex[n] = K1Ex[n] * Ex[n] \
              + K2Ex[n] * (RYn[j] * (Hz[n] - Hz[n - Nj])
                         - RZn[k] * (Hy[n] - Hy[n - Nk]))

@cuda.jit(cache=True)
def _Ex_p_no_vector(
    t, fPlanewave, Xc, Yn, Zn,
    Ex, Hy, Hz, iEx, C1E, C2E, RYn, RZn,
    iMin, iMax, jMin, jMax, kMin, kMax, Ni, Nj, Nk, N0):

    k, j, i = cuda.grid(3)
    i += iMin
    j += jMin
    k += kMin

    if (i < iMax + 0) and \
       (j < jMax + 1) and \
       (k < kMax + 1):
        n = (Ni * i) + (Nj * j) + (Nk * k) + N0
        m = iEx[n]
        if m == 0:
            Ex[n] += \
                  + RYn[j] * (Hz[n] - Hz[n - Nj]) \
                  - RZn[k] * (Hy[n] - Hy[n - Nk])
        else:
            fi, dfi = sol_cuda.planewave.f(Xc[i], Yn[j], Zn[k], t, fPlanewave[0], fPlanewave)
            Ex[n] = C1E[m] * Ex[n] \
                  + C2E[m] * (RYn[j] * (Hz[n] - Hz[n - Nj])
                            - RZn[k] * (Hy[n] - Hy[n - Nk])) \
                  - (C1E[m] - C2E[m]) * dfi \
                  - (1 - C1E[m]) * fi



# ---- python/sol_cuda/updateHx.py
@cuda.jit(cache=True)
def _Hx_f_vector(
    Hx, Ey, Ez, K1Hx, K2Hx, RYc, RZc,
    iMin, iMax, jMin, jMax, kMin, kMax, Ni, Nj, Nk, N0):

    k, j, i = cuda.grid(3)
    i += iMin
    j += jMin
    k += kMin

    if (i < iMax + 1) and \
       (j < jMax + 0) and \
       (k < kMax + 0):
        n = (Ni * i) + (Nj * j) + (Nk * k) + N0
        Hx[n] = K1Hx[n] * Hx[n] \
              - K2Hx[n] * (RYc[j] * (Ez[n + Nj] - Ez[n])
                         - RZc[k] * (Ey[n + Nk] - Ey[n]))



# ---- python/sol_cuda/average.py
@cuda.jit(cache=True)
def _calcE_gpu(average_array,
    Ex, Ey, Ez,
    iMin, iMax, jMin, jMax, kMin, kMax, Ni, Nj, Nk, N0):

    k, j, i = cuda.grid(3)

    idx = i * (jMax - jMin) * (kMax - kMin) + j * (kMax - kMin) + k

    i += iMin
    j += jMin
    k += kMin
    if (i < iMax) and (j < jMax) and (k < kMax):
        n   = (Ni * (i    )) + (Nj * (j    )) + (Nk * (k    )) + N0
        ni  = (Ni * (i + 1)) + (Nj * (j    )) + (Nk * (k    )) + N0
        nj  = (Ni * (i    )) + (Nj * (j + 1)) + (Nk * (k    )) + N0
        nk  = (Ni * (i    )) + (Nj * (j    )) + (Nk * (k + 1)) + N0
        njk = (Ni * (i    )) + (Nj * (j + 1)) + (Nk * (k + 1)) + N0
        nki = (Ni * (i + 1)) + (Nj * (j    )) + (Nk * (k + 1)) + N0
        nij = (Ni * (i + 1)) + (Nj * (j + 1)) + (Nk * (k    )) + N0

        average_array[idx] = \
            abs(Ex[n] + Ex[nj] + Ex[nk] + Ex[njk]) + \
            abs(Ey[n] + Ey[nk] + Ey[ni] + Ey[nki]) + \
            abs(Ez[n] + Ez[ni] + Ez[nj] + Ez[nij])



# ---- python/sol_cuda/MurH.py
@cuda.jit(cache=True)
def _calc_gpu(H, numH, fMurH, iMurH, Ni, Nj, Nk, N0):
    num = cuda.grid(1)
    if num < numH:
        i, j, k, i1, j1, k1 = iMurH[num]
        n  = (Ni * i ) + (Nj * j ) + (Nk * k ) + N0
        n1 = (Ni * i1) + (Nj * j1) + (Nk * k1) + N0
        H[n] = fMurH[num, 0] + fMurH[num, 1] * (H[n1] - H[n])
        fMurH[num, 0] = H[n1]



# ---- python/sol_cuda/PmlEx.py
@cuda.jit(cache=True)
def _calcEx_gpu(
    Ny, Nz, Ex, Hy, Hz, Exy, Exz, RYn, RZn,
    numEx, iPmlEx, gPmlYn, gPmlZn, rPmlE, rPml, pml_l,
    Ni, Nj, Nk, N0):

    num = cuda.grid(1)

    if num < numEx:
        i, j, k, m = iPmlEx[num]

        n   = Ni * (i    ) + Nj * (j    ) + Nk * (k    ) + N0
        nj1 = Ni * (i    ) + Nj * (j - 1) + Nk * (k    ) + N0
        nk1 = Ni * (i    ) + Nj * (j    ) + Nk * (k - 1) + N0

        jc = min(max(j, 0), Ny    )
        dhz = Hz[n] - Hz[nj1]
        ry = RYn[jc] * rPmlE[m]
        Exy[num] = (Exy[num] + (ry * dhz)) / (1 + (gPmlYn[j + pml_l] * rPml[m]))

        kc = min(max(k, 0), Nz    )
        dhy = Hy[n] - Hy[nk1]
        rz = RZn[kc] * rPmlE[m]
        Exz[num] = (Exz[num] - (rz * dhy)) / (1 + (gPmlZn[k + pml_l] * rPml[m]))

        Ex[n] = Exy[num] + Exz[num]



# ---- python/sol_cuda/DispEx.py
@cuda.jit(cache=True)
def _calEx_gpu(ndisp,
    source, t, fPlanewave, Xc, Yn, Zn, Ex, iDispEx, fDispEx,
    Ni, Nj, Nk, N0):

    idisp = cuda.grid(1)

    if idisp < ndisp:
        i, j, k = iDispEx[idisp, 0:3]
        f1, f2, f3 = fDispEx[idisp, 1:4]

        n = (Ni * i) + (Nj * j) + (Nk * k) + N0

        fi = 0
        if source == 1:
            fi, _ = sol_cuda.planewave.f(Xc[i], Yn[j], Zn[k], t, fPlanewave[0], fPlanewave)

        Ex[n] += f1 * fDispEx[idisp, 0]

        fDispEx[idisp, 0] = f2 * (Ex[n] + fi) + f3 * fDispEx[idisp, 0]



# ---- python/sol_cuda/inductor.py
@cuda.jit(cache=True)
def _calcL_gpu(
    cdt, ninductor, iInductor, fInductor,
    Ex, Ey, Ez, Hx, Hy, Hz,
    iMin, iMax, jMin, jMax, kMin, kMax, Ni, Nj, Nk, N0):

    iinductor = cuda.grid(1)

    if iinductor < ninductor:

        idir       = iInductor[iinductor, 0]
        i, j, k    = iInductor[iinductor, 1:4]
        dx, dy, dz = fInductor[iinductor, 3:6]
        ldat       = fInductor[iinductor, 7:10]  # factor, e-new, e-sum (作業配列のpointer)

        n   = Ni * (i    ) + Nj * (j    ) + Nk * (k    ) + N0
        ni1 = Ni * (i - 1) + Nj * (j    ) + Nk * (k    ) + N0
        nj1 = Ni * (i    ) + Nj * (j - 1) + Nk * (k    ) + N0
        nk1 = Ni * (i    ) + Nj * (j    ) + Nk * (k - 1) + N0

        if   (idir == 0) and \
            (iMin <= i) and (i <  iMax) and \
            (jMin <= j) and (j <= jMax) and \
            (kMin <= k) and (k <= kMax):  # MPI
            # X方向
            roth = (Hz[n] - Hz[nj1]) / dy \
                 - (Hy[n] - Hy[nk1]) / dz
            Ex[n] = ldat[1] + (cdt * roth) - (ldat[0] * cdt**2 * ldat[2])
            ldat[1] = Ex[n]
            ldat[2] += ldat[1]
        elif (idir == 1) and \
            (iMin <= i) and (i <= iMax) and \
            (jMin <= j) and (j <  jMax) and \
            (kMin <= k) and (k <= kMax):  # MPI
            # Y方向
            roth = (Hx[n] - Hx[nk1]) / dz \
                 - (Hz[n] - Hz[ni1]) / dx
            Ey[n] = ldat[1] + (cdt * roth) - (ldat[0] * cdt**2 * ldat[2])
            ldat[1] = Ey[n]
            ldat[2] += ldat[1]
        elif (idir == 2) and \
            (iMin <= i) and (i <= iMax) and \
            (jMin <= j) and (j <= jMax) and \
            (kMin <= k) and (k <  kMax):  # MPI
            # Z方向
            roth = (Hy[n] - Hy[ni1]) / dx \
                 - (Hx[n] - Hx[nj1]) / dy
            Ez[n] = ldat[1] + (cdt * roth) - (ldat[0] * cdt**2 * ldat[2])
            ldat[1] = Ez[n]
            ldat[2] += ldat[1]



# ---- python/sol_cuda/pointV.py
@cuda.jit(cache=True)
def _v_gpu(
    itime, source, t, fPlanewave, Xn, Yn, Zn, Xc, Yc, Zc,
    npoint, iPoint, fPoint, VPoint,
    Ex, Ey, Ez,
    iMin, iMax, jMin, jMax, kMin, kMax, Ni, Nj, Nk, N0):

    ipoint = cuda.grid(1)

    if ipoint < npoint:

        idir = iPoint[ipoint, 0]
        i    = iPoint[ipoint, 1]
        j    = iPoint[ipoint, 2]
        k    = iPoint[ipoint, 3]
        ds   = fPoint[ipoint, 3 + idir]  # = dx/dy/dz (X/Y/Z)

        n = (Ni * i) + (Nj * j) + (Nk * k) + N0

        e = 0
        if   (idir == 0) and \
            (iMin <= i) and (i <  iMax) and \
            (jMin <= j) and (j <= jMax) and \
            (kMin <= k) and (k <= kMax):  # MPI
            e = Ex[n]
            if source == 1:
                fi, _ = sol_cuda.planewave.f(Xc[i], Yn[j], Zn[k], t, fPlanewave[0], fPlanewave)
                e += fi
        elif (idir == 1) and \
            (iMin <= i) and (i <= iMax) and \
            (jMin <= j) and (j <  jMax) and \
            (kMin <= k) and (k <= kMax):  # MPI
            e = Ey[n]
            if source == 1:
                fi, _ = sol_cuda.planewave.f(Xn[i], Yc[j], Zn[k], t, fPlanewave[1], fPlanewave)
                e += fi
        elif (idir == 2) and \
             (iMin <= i) and (i <= iMax) and \
             (jMin <= j) and (j <= jMax) and \
             (kMin <= k) and (k <  kMax):  # MPI
            e = Ez[n]
            if source == 1:
                fi, _ = sol_cuda.planewave.f(Xn[i], Yn[j], Zc[k], t, fPlanewave[2], fPlanewave)
                e += fi

        VPoint[ipoint, itime] = e * (-ds)



# ---- python/sol_cuda/Near3d.py
@cuda.jit(cache=True)
def _dftEx_gpu(
    Ex, cEx, ef, n0,
    iMin, iMax, jMin, jMax, kMin, kMax, Ni, Nj, Nk, N0):

    k, j, i = cuda.grid(3)
    i += iMin
    j += jMin
    k += kMin
    if (i <  iMax) and \
       (j <= jMax) and \
       (k <= kMax):
        n = (Ni * i) + (Nj * j) + (Nk * k) + N0
        cEx[n0 + n] += Ex[n] * ef



# ---- python/sol_cuda/PbcX.py
@cuda.jit(cache=True)
def _Hy_gpu(Hy, Nx, jMin, jMax, kMin, kMax, Ni, Nj, Nk, N0):

    j, k = cuda.grid(2)
    j += jMin - 0
    k += kMin - 1

    if (j <= jMax) and \
       (k <= kMax):
        id1 = -1
        id2 = 0
        id3 = Nx - 1
        id4 = Nx
        n1 = (Ni * id1) + (Nj * j) + (Nk * k) + N0
        n2 = (Ni * id2) + (Nj * j) + (Nk * k) + N0
        n3 = (Ni * id3) + (Nj * j) + (Nk * k) + N0
        n4 = (Ni * id4) + (Nj * j) + (Nk * k) + N0
        Hy[n1] = Hy[n3]
        Hy[n4] = Hy[n2]

