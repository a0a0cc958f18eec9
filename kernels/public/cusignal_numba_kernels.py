"""Public kernels: cuSignal's (RAPIDS) numba.cuda kernels, from before they moved to CUDA C: 2-D
correlation and convolution (tuple variables as indices, `temp: out.dtype = 0`, casts through
`cp.int32`), polyphase upfirdn in 1-D (grid-stride loop) and 2-D, and the Lomb-Scargle periodogram
(`if not y_dot[0]`, sin/cos/atan2 imported from math).

Repository: https://github.com/rapidsai/cusignal (commit 4c39f81b3b3b2f725fc77af258b516ee3ec9cd1b)
Licence: Apache-2.0 (LICENSE of the repository; each file's header: "Copyright (c) 2019-2020,
NVIDIA CORPORATION. Licensed under the Apache License, Version 2.0")
Paths: python/cusignal/_signaltools.py (_numba_correlate_2d, _numba_convolve_2d),
python/cusignal/_upfirdn.py (_numba_upfirdn_1d, _numba_upfirdn_2d),
python/cusignal/_spectral.py (_numba_lombscargle)
Upstream compiles each plain function with `cuda.jit(signature, fastmath=True)(function)` from a
kernel cache; the cases give the plain functions.
Edits: none to the kernels. One to the imports: cuSignal imports cupy as `cp` and uses `cp.int32`
inside the kernels, which is numpy's int32 (cupy re-exports numpy's scalar types); cupy is not
installed here, so `import numpy as cp` stands in for `import cupy as cp`. The cupy kernels, host
wrappers and signature helpers around them are left out.

Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
compliance with the License. You may obtain a copy of the License at
http://www.apache.org/licenses/LICENSE-2.0. Unless required by applicable law or agreed to in writing,
software distributed under the License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR
CONDITIONS OF ANY KIND, either express or implied.
"""
import numpy as cp   # edit: stands in for `import cupy as cp` (see above)

from math import sin, cos, atan2
from numba import cuda


def _numba_correlate_2d(
    inp, inpW, inpH, kernel, S0, S1, out, outW, outH, pick
):

    y, x = cuda.grid(2)

    if pick != 3:  # non-square
        i = cp.int32(x + S0)
    else:
        i = cp.int32(x + S1)
    j = cp.int32(y + S0)

    oPixelPos = (x, y)
    if (x < outH) and (y < outW):

        temp: out.dtype = 0

        if pick == 1:  # odd
            for k in range(cp.int32(-S0), cp.int32(S0 + 1)):
                for l in range(cp.int32(-S0), cp.int32(S0 + 1)):
                    iPixelPos = (cp.int32(i + k), cp.int32(j + l))
                    coefPos = (cp.int32(k + S0), cp.int32(l + S0))
                    temp += inp[iPixelPos] * kernel[coefPos]
                    # temp = x

        elif pick == 2:  # even
            for k in range(cp.int32(-S0), cp.int32(S0)):
                for l in range(cp.int32(-S0), cp.int32(S0)):
                    iPixelPos = (cp.int32(i + k), cp.int32(j + l))
                    coefPos = (cp.int32(k + S0), cp.int32(l + S0))
                    temp += inp[iPixelPos] * kernel[coefPos]

        else:  # non-squares
            for k in range(cp.int32(S0)):
                for l in range(cp.int32(S1)):
                    iPixelPos = (
                        cp.int32(cp.int32(i + k) - S1),
                        cp.int32(cp.int32(j + l) - S0),
                    )
                    coefPos = (k, l)
                    temp += inp[iPixelPos] * kernel[coefPos]

        out[oPixelPos] = temp


def _numba_convolve_2d(inp, inpW, inpH, kernel, S0, S1, out, outW, outH, pick):

    y, x = cuda.grid(2)

    if pick != 3:  # non-square
        i = cp.int32(x + S0)
    else:
        i = cp.int32(x + S1)
    j = cp.int32(y + S0)

    oPixelPos = (x, y)
    if (x < outH) and (y < outW):

        temp: out.dtype = 0

        if pick == 1:  # odd
            for k in range(cp.int32(-S0), cp.int32(S0 + 1)):
                for l in range(cp.int32(-S0), cp.int32(S0 + 1)):
                    iPixelPos = (cp.int32(i + k), cp.int32(j + l))
                    coefPos = (cp.int32(-k + S0), cp.int32(-l + S0))
                    temp += inp[iPixelPos] * kernel[coefPos]

        elif pick == 2:  # even
            for k in range(cp.int32(-S0), cp.int32(S0)):
                for l in range(cp.int32(-S0), cp.int32(S0)):
                    iPixelPos = (cp.int32(i + k), cp.int32(j + l))
                    coefPos = (
                        cp.int32(cp.int32(-k + S0) - 1),
                        cp.int32(cp.int32(-l + S0) - 1),
                    )
                    temp += inp[iPixelPos] * kernel[coefPos]

        else:  # non-squares
            for k in range(cp.int32(S0)):
                for l in range(cp.int32(S1)):
                    iPixelPos = (
                        cp.int32(cp.int32(i + k) - S1),
                        cp.int32(cp.int32(j + l) - S0),
                    )
                    coefPos = (
                        cp.int32(cp.int32(-k + S0) - 1),
                        cp.int32(cp.int32(-l + S1) - 1),
                    )
                    temp += inp[iPixelPos] * kernel[coefPos]

        out[oPixelPos] = temp


def _numba_upfirdn_2d(
    inp, h_trans_flip, up, down, axis, x_shape_a, h_per_phase, padded_len, out
):

    y, x = cuda.grid(2)

    if x < out.shape[1] and y < out.shape[0]:

        if axis == 1:
            x_idx = cp.int32(cp.int32(cp.int32(x * down) // up) % padded_len)
            h_idx = cp.int32(cp.int32(cp.int32(x * down) % up) * h_per_phase)
        else:
            x_idx = cp.int32(cp.int32(cp.int32(y * down) // up) % padded_len)
            h_idx = cp.int32(cp.int32(cp.int32(y * down) % up) * h_per_phase)

        x_conv_idx = cp.int32(cp.int32(x_idx - h_per_phase) + 1)
        if x_conv_idx < 0:
            h_idx -= x_conv_idx
            x_conv_idx = 0

        temp: out.dtype = 0

        # If axis = 0, we need to know each column in x.
        for x_c in range(cp.int32(x_conv_idx), cp.int32(x_idx + 1)):
            if x_c < x_shape_a and x_c >= 0:  # If inside input
                # if multi-dimenstional array
                if axis == 1:  # process columns
                    temp += inp[y, x_c] * h_trans_flip[h_idx]
                else:  # process rows
                    temp += inp[x_c, x] * h_trans_flip[h_idx]

            h_idx += 1

        out[y, x] = temp


def _numba_upfirdn_1d(
    x, h_trans_flip, up, down, axis, x_shape_a, h_per_phase, padded_len, out
):

    X = cuda.grid(1)
    strideX = cuda.gridsize(1)

    for i in range(X, cp.int32(out.shape[0]), strideX):

        x_idx = cp.int32(cp.int32(cp.int32(i * down) // up) % padded_len)
        h_idx = cp.int32(cp.int32(cp.int32(i * down) % up) * h_per_phase)

        x_conv_idx = cp.int32(cp.int32(x_idx - h_per_phase) + 1)
        if x_conv_idx < 0:
            h_idx -= x_conv_idx
            x_conv_idx = 0

        temp: out.dtype = 0

        # If axis = 0, we need to know each column in x.
        for x_c in range(cp.int32(x_conv_idx), cp.int32(x_idx + 1)):
            if x_c < x_shape_a and x_c >= 0:
                temp += x[x_c] * h_trans_flip[h_idx]
            h_idx += 1

        out[i] = temp


def _numba_lombscargle(x, y, freqs, pgram, y_dot):
    """
    _lombscargle(x, y, freqs)
    Computes the Lomb-Scargle periodogram.
    Parameters
    ----------
    x : array_like
        Sample times.
    y : array_like
        Measurement values (must be registered so the mean is zero).
    freqs : array_like
        Angular frequencies for output periodogram.
    Returns
    -------
    pgram : array_like
        Lomb-Scargle periodogram.
    Raises
    ------
    ValueError
        If the input arrays `x` and `y` do not have the same shape.
    See also
    --------
    lombscargle
    """

    F = cuda.grid(1)
    strideF = cuda.gridsize(1)

    if not y_dot[0]:
        yD = 1.0
    else:
        yD = 2.0 / y_dot[0]

    for i in range(F, freqs.shape[0], strideF):

        # Copy data to registers
        freq = freqs[i]

        xc = 0.0
        xs = 0.0
        cc = 0.0
        ss = 0.0
        cs = 0.0

        for j in range(x.shape[0]):

            c = cos(freq * x[j])
            s = sin(freq * x[j])

            xc += y[j] * c
            xs += y[j] * s
            cc += c * c
            ss += s * s
            cs += c * s

        tau = atan2(2.0 * cs, cc - ss) / (2.0 * freq)
        c_tau = cos(freq * tau)
        s_tau = sin(freq * tau)
        c_tau2 = c_tau * c_tau
        s_tau2 = s_tau * s_tau
        cs_tau = 2.0 * c_tau * s_tau

        pgram[i] = (
            0.5
            * (
                (
                    (c_tau * xc + s_tau * xs) ** 2
                    / (c_tau2 * cc + cs_tau * cs + s_tau2 * ss)
                )
                + (
                    (c_tau * xs - s_tau * xc) ** 2
                    / (c_tau2 * ss - cs_tau * cs + s_tau2 * cc)
                )
            )
        ) * yD
