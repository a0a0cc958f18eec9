"""Public kernels: PyLops' numba.cuda kernels for the FourierRadon2D operator (complex64 data in the
frequency domain, exp(-2 pi i f p h) built from cuda.libdevice.sincosf, accumulated in two real
registers and stored as loc_r + IMG * loc_i).

Repository: https://github.com/PyLops/pylops (commit cca7184e80da3af1ec27173df7905b676799ec23)
Path: pylops/signalprocessing/_fourierradon2d_cuda.py
Licence: LGPL-3.0 (LICENSE.md of the repository: GNU Lesser General Public License, version 3; PyLops
Copyright (c) the PyLops developers). This file is distributed under the same licence.
Edits: none to the kernels. The constants: upstream builds TWO_PI_MINUS, TWO_PI_PLUS and IMG with
cupy (`cp.float32(-2.0 * pi)`, `cp.complex64(1j)`); cupy is not installed here, so numpy's
np.float32 / np.complex64 make the same values (`import cupy as cp` becomes `import numpy as np`).
The host-side callers are left out.
"""
from math import pi

import numpy as np
from numba import cuda

TWO_PI_MINUS = np.float32(-2.0 * pi)
TWO_PI_PLUS = np.float32(2.0 * pi)
IMG = np.complex64(1j)


@cuda.jit
def _radon_inner_2d_kernel(x, y, f, px, h, flim0, flim1, npx, nh):
    """Cuda kernels for FourierRadon2D operator

    Cuda implementation of the on-the-fly kernel creation and application for the
    FourierRadon2D operator. See :class:`pylops.signalprocessing.FourierRadon2D`
    for details about input parameters.

    """
    ih, ifr = cuda.grid(2)
    if ih < nh and ifr >= flim0 and ifr <= flim1:
        for ipx in range(npx):
            # slow computation of exp(1j * x)
            # y[ih, ifr] += x[ipx, ifr] * exp(TWO_PI_MINUS * f[ifr] * px[ipx] * h[ih])
            # fast computation of exp(1j * x) - see https://stackoverflow.com/questions/9860711/cucomplex-h-and-exp/9863048#9863048
            s, c = cuda.libdevice.sincosf(TWO_PI_MINUS * f[ifr] * px[ipx] * h[ih])
            y[ih, ifr] += x[ipx, ifr] * (c + IMG * s)


@cuda.jit
def _aradon_inner_2d_kernel(x, y, f, px, h, flim0, flim1, npx, nh):
    """Cuda kernels for FourierRadon2D operator

    Cuda implementation of the on-the-fly kernel creation and application for the
    FourierRadon2D operator. See :class:`pylops.signalprocessing.FourierRadon2D`
    for details about input parameters.

    """
    ipx, ifr = cuda.grid(2)
    if ipx < npx and ifr >= flim0 and ifr <= flim1:
        for ih in range(nh):
            # slow computation of exp(1j * x)
            # x[ipx, ifr] += y[ih, ifr] * exp(TWO_PI_I_PLUS * f[ifr] * px[ipx] * h[ih])
            # fast computation of exp(1j * x) - see https://stackoverflow.com/questions/9860711/cucomplex-h-and-exp/9863048#9863048
            s, c = cuda.libdevice.sincosf(TWO_PI_PLUS * f[ifr] * px[ipx] * h[ih])
            x[ipx, ifr] += y[ih, ifr] * (c + IMG * s)


