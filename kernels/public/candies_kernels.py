"""Public kernels: Candies (features of fast radio burst candidates), its numba.cuda kernels: the
dedispersion of a dynamic spectrum (`fh**-2`, `int(round(...))`, an atomic add at a computed 2-D
tuple index with `int(fi / ffactor)`) and the DM-time transform (`int(cuda.blockIdx.x)` as the time
index, a loop over channels accumulating gathered samples, one atomic add per thread). Parameters
carry type annotations (`nf: int`, `df: float`).

Repository: https://github.com/astrogewgaw/candies (commit afc97fc8af2659efa124d70c790555056e52095a)
Licence: MIT (LICENSE of the repository: "Copyright (c) 2023 Ujjwal Panda")
Path: src/candies/kernels.py
Edits: none to the kernels. One to the imports: `from candies.utilities import kdm` is replaced by the
constant's definition copied from src/candies/utilities.py at the same commit (`kdm: float =
4.1488064239e3`), since the candies package is not installed here.

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions: The above copyright notice and this
permission notice shall be included in all copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""

from numba import cuda

kdm: float = 4.1488064239e3   # edit: copied from candies.utilities in place of its import

@cuda.jit
def dedisperse(
    dyn,
    ft,
    nf: int,
    nt: int,
    df: float,
    dt: float,
    fh: float,
    dm: float,
    ffactor: float,
    tfactor: float,
):
    """
    The JIT-compiled GPU kernel for dedispersing the dynamic spectrum via rolling.
    """
    fi, ti = cuda.grid(2)  # type: ignore

    acc = 0.0
    if fi < nf and ti < nt:
        k1 = kdm * dm / dt
        k2 = k1 * fh**-2
        f = fh - fi * df
        dbin = int(round(k1 * f**-2 - k2))
        xti = ti + dbin
        if xti >= nt:
            xti -= nt
        acc += ft[fi, xti]
        cuda.atomic.add(dyn, (int(fi / ffactor), int(ti / tfactor)), acc)  # type: ignore


@cuda.jit
def fastdmt(
    dmt,
    ft,
    nf: int,
    nt: int,
    df: float,
    dt: float,
    fh: float,
    ddm: float,
    dmlow: float,
    tfactor: int,
):
    """
    The JIT-compiled GPU kernel for creating the DM v/s time array.
    """
    ti = int(cuda.blockIdx.x)  # type: ignore
    dmi = int(cuda.threadIdx.x)  # type: ignore

    acc = 0.0
    k1 = kdm * (dmlow + dmi * ddm) / dt
    k2 = k1 * fh**-2
    for fi in range(nf):
        f = fh - fi * df
        dbin = int(round(k1 * f**-2 - k2))
        xti = ti + dbin
        if xti >= nt:
            xti -= nt
        acc += ft[fi, xti]
    cuda.atomic.add(dmt, (dmi, int(ti / tfactor)), acc)  # type: ignore
