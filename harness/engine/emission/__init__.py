"""Emission: the forward and reverse kernels written as numba.cuda source."""
