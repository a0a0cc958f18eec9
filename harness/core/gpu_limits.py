"""What a CUDA launch may ask for, on every GPU numba-cuda supports. Checked where a case is loaded
(harness/cases/loader.py, which imports no numpy) and where the simulator launches
(harness/backends/sim_block.py), so both refuse what a GPU would."""

MAX_BLOCK_THREADS = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2 ** 31 - 1, 65535, 65535)
