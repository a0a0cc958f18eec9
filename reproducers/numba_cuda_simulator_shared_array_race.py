"""numba-cuda's CUDA simulator (0.30.4): threads of one block can get different "shared" arrays.

FakeCUDAShared.array looks the calling line up in a dict and, when it is not there, allocates and
stores a new array: check, then act. A thread switch between the two lets two threads of a block
each allocate an array of their own; their writes are then invisible to each other after the
barrier, and a correct kernel computes a wrong result now and then. A short thread switch interval
makes the window easy to hit; at Python's default (5 ms) it is rare but not impossible.

Run: python reproducers/numba_cuda_simulator_shared_array_race.py [--launches 1000] [--interval 1e-6]
  exit 0 and "no wrong sum" when every launch's block sum is right; exit 1, naming how many launches
  gave a wrong sum, when the race showed. No harness import.
Found by the harness (harness/backends/sim_shared.py holds its fix: dict.setdefault).
"""
import argparse
import os
import sys

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import numpy as np  # noqa: E402
from numba import cuda, float64  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--launches", type=int, default=1000)
parser.add_argument("--interval", type=float, default=1e-6, help="sys.setswitchinterval during the launches")
options = parser.parse_args()

THREADS = 32


@cuda.jit
def block_sum(out):
    t = cuda.threadIdx.x
    cuda.syncthreads()              # every thread of the block is in flight when the array is asked for
    sm = cuda.shared.array(THREADS, float64)
    sm[t] = t + 1.0
    cuda.syncthreads()
    if t == 0:
        s = 0.0
        for k in range(THREADS):
            s += sm[k]
        out[0] = s


expected = THREADS * (THREADS + 1) / 2
out = np.zeros(1)
wrong = 0
sys.setswitchinterval(options.interval)
for _ in range(options.launches):
    out[0] = 0.0
    block_sum[1, THREADS](out)
    wrong += out[0] != expected
sys.setswitchinterval(0.005)
if wrong:
    print(f"{wrong} of {options.launches} launches gave a wrong block sum (expected {expected:g}): "
          "the block's threads wrote to different shared arrays")
    sys.exit(1)
print(f"no wrong sum in {options.launches} launches")
