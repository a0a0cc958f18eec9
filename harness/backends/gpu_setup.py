"""Run before the main job (tox env `cases`): on a machine with an NVIDIA GPU, make sure cupy is
installed so `--backend auto` picks the GPU; elsewhere say that the simulator will be used.

    python -m harness.backends.gpu_setup          # prints one line; installs cupy only with a GPU
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys


def driver_cuda_major() -> int | None:
    """The CUDA major version the driver supports, or None without a usable NVIDIA GPU."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"CUDA Version:\s*(\d+)", out)
    return int(found.group(1)) if found else None


def main() -> int:
    major = driver_cuda_major()
    if major is None:
        print("gpu_setup: no NVIDIA GPU found: the main job runs on the CUDA simulator")
        return 0
    if importlib.util.find_spec("cupy") is not None:
        print(f"gpu_setup: GPU with CUDA {major} and cupy present: the main job runs on the GPU")
        return 0
    wheel = "cupy-cuda13x" if major >= 13 else "cupy-cuda12x"
    print(f"gpu_setup: GPU with CUDA {major} found; installing {wheel} so the main job runs on it")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", wheel])
    if done.returncode != 0:
        print(f"gpu_setup: installing {wheel} failed: the main job falls back to the simulator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
