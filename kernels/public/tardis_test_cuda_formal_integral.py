"""Public kernels: TARDIS's tests of its numba.cuda formal integral: small kernels that call one
device function of the module (module-qualified: `formal_integral_cuda.intensity_black_body_cuda(nu,
T)`) and store its result in every thread's element of `actual`.

Repository: https://github.com/tardis-sn/tardis (commit d7ab77d21325a2966a188f1a84e71b97243df687)
Licence: BSD-3-Clause (LICENSE.rst of the repository: "Copyright (c) 2014, TARDIS-SN Developers";
the licence text is in tardis_formal_integral_cuda.py beside this file)
Path: tardis/montecarlo/montecarlo_numba/tests/test_cuda_formal_integral.py
Edits: none to the kernels; their docstrings are kept. The import
`import tardis.montecarlo.montecarlo_numba.formal_integral_cuda as formal_integral_cuda` is replaced by
loading the copy of that module beside this file under the same name (the tardis package is not
installed, and kernel files are loaded by path, not as a package). The pytest functions, fixtures
and the other imports are left out.
"""
import importlib.util
import pathlib

from numba import cuda

# edit: stands in for `import tardis.montecarlo.montecarlo_numba.formal_integral_cuda as formal_integral_cuda`
_spec = importlib.util.spec_from_file_location(
    "formal_integral_cuda", pathlib.Path(__file__).with_name("tardis_formal_integral_cuda.py"))
formal_integral_cuda = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(formal_integral_cuda)


@cuda.jit
def black_body_caller(nu, T, actual):
    """
    This calls the CUDA function and fills out
    the array
    """
    x = cuda.grid(1)
    actual[x] = formal_integral_cuda.intensity_black_body_cuda(nu, T)


@cuda.jit
def trapezoid_integration_caller(data, h, actual):
    """
    This calls the CUDA function and fills out
    the array
    """
    x = cuda.grid(1)
    actual[x] = formal_integral_cuda.trapezoid_integration_cuda(data, h)


@cuda.jit
def calculate_z_caller(r, p, inv_t, actual):
    """
    This calls the CUDA function and fills out
    the array
    """
    x = cuda.grid(1)
    actual[x] = formal_integral_cuda.calculate_z_cuda(r, p, inv_t)


@cuda.jit
def populate_z_caller(
    r_inner, r_outer, time_explosion, p, oz, oshell_id, actual
):
    """
    This calls the CUDA function and fills out
    the array
    """
    x = cuda.grid(1)
    actual[x] = formal_integral_cuda.populate_z_cuda(
        r_inner, r_outer, time_explosion, p, oz, oshell_id
    )


@cuda.jit
def line_search_cuda_caller(line_list_nu, nu_insert, actual):
    """
    This calls the CUDA function and fills out
    the array
    """
    x = cuda.grid(1)
    actual[x] = formal_integral_cuda.line_search_cuda(
        line_list_nu, nu_insert, len(line_list_nu)
    )


@cuda.jit
def reverse_binary_search_cuda_caller(
    line_list_nu, nu_insert, imin, imax, actual
):
    """
    This calls the CUDA function and fills out
    the array
    """
    x = cuda.grid(1)
    actual[x] = formal_integral_cuda.reverse_binary_search_cuda(
        line_list_nu, nu_insert, imin, imax
    )
