"""The compile-only ptx tier imports kernels published with eager signatures, as they are written:
numba compiles such a kernel at import for the current device and binds it to a context, and the
tier has no driver (harness/backends/ptx.py). Runs in a subprocess: the tier cannot share a
process with the simulator."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import importlib.util, sys
    from harness.backends.ptx import PtxBackend
    backend = PtxBackend()
    spec = importlib.util.spec_from_file_location("eager_kernels", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from numba import float32
    from numba.types import Array
    ptx = backend.compile(module.scale.py_func, (Array(float32, 1, "C"), Array(float32, 1, "C")), backend.config())
    print("compiled", ".entry" in str(ptx))
""")

KERNELS = textwrap.dedent("""
    from numba import cuda, float32

    @cuda.jit("(f4[:], f4[:])")
    def scale(out, x):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = 2 * x[i]

    @cuda.jit((float32[:], float32[:]))
    def shift(out, x):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = x[i] + 1
""")


def test_a_module_of_eagerly_compiled_kernels_imports_and_compiles_on_the_ptx_tier(tmp_path):
    path = tmp_path / "eager_kernels.py"
    path.write_text(KERNELS)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "compiled True"
