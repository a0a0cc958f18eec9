"""Public kernel: ENCCS's "GPU programming: why, when and how?" lesson, the heat-equation stencil
in numba.cuda (five-point update of the temperature field, interior points only).

Repository: https://github.com/ENCCS/gpu-programming (commit 87fab1cb29329f6fcf5bf592b96b22ca1c61cec6)
Licence: MIT (LICENSE.code of the repository: "Copyright (c) 2023-2024, ENCCS and individual
contributors"; the file's own header: "(c) 2023 ENCCS, CSC and the contributors")
Path: content/examples/stencil/python-numba/core_cuda.py (_evolve_kernel)
Edits: none to the kernel. Only the kernel is copied: the host function `evolve` and the lesson's
`from heat import *` (its field class) are left out.

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions: The above copyright notice and this
permission notice shall be included in all copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""
# (c) 2023 ENCCS, CSC and the contributors
import math
from numba import cuda


@cuda.jit()
def _evolve_kernel(curr, prev, a, dt, dx2, dy2):
    nx, ny = prev.shape # These are the FULL dims, rows+2 / cols+2
    i, j = cuda.grid(2)
    if ((i >= 1) and (i < nx-1) 
        and (j >= 1) and (j < ny-1)):
        curr[i, j] = prev[i, j] + a * dt * ( \
            (prev[i+1, j] - 2*prev[i, j] + prev[i-1, j]) / dx2 + \
            (prev[i, j+1] - 2*prev[i, j] + prev[i, j-1]) / dy2 )
