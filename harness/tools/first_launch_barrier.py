"""A barrier that misses a shared store on a kernel's first launch: plain numba-cuda, no harness.

    python harness/tools/first_launch_barrier.py [SAMPLES]        # on a GPU machine

KERNEL below is the forward-mode kernel the harness's AD engine generated for fuzz seed 740
(kernels/fuzz_found.py: extremum_tie_before_barrier), as it was before barriers got a fence. One
block of 32 threads; every thread applies the same atomic min (a float64 CAS loop), thread 0 alone
(the winner) takes a branch with a global store, then each thread t stores into shared sh[t],
`cuda.syncthreads()`, and reads sh[(t + 25) % 32]: thread 7 reads what thread 0 stored.

Each sample is a fresh process: it fills shared memory with -7.0 from another kernel, launches
KERNEL twice with the same inputs and reports whether the first launch's out[7] / d_out[7] differ
from the second's. Measured on an H200 (CUDA 13, numba-cuda 0.30.4, 2026-12-02), 12 samples each:
as generated 11 of 12 first launches differ, with `cuda.syncwarp()` before the barrier 8 of 12,
with `cuda.threadfence_block()` before it 0 of 12, without the winner's store 0 of 12. A barrier
orders a block's shared-memory accesses by itself (PTX ISA, bar.sync), so the first launches are
wrong; the engine now emits the fence before every barrier (harness/engine/emission/emit_state.py).
"""
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

KERNEL = """import math
from numba import cuda
from numpy import float64, int64
def kernel__forward(out, d_out, x, d_x, y, d_y, a, d_a, idx, n, acc, d_acc, cnt, _xS0, _xI0, _xW0, _xV0):
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    sh = cuda.shared.array(32, float64)
    d_sh = cuda.shared.array(32, float64)
    _t3 = y[i]
    d__t3 = d_y[i]
    _t4 = idx[i]
    _t5 = x[_t4]
    d__t5 = d_x[_t4]
    t1 = _t3 * _t5
    d_t1 = (_t5) * d__t3 + (_t3) * d__t5
    t2 = math.cos(0.41)
    helper_a = t1
    d_helper_a = d_t1
    helper_b = t2
    _t8 = math.tanh(helper_a)
    d__t8 = (float64(1.0) - _t8 * _t8) * d_helper_a
    _t9 = _t8 + helper_b
    d__t9 = d__t8
    _t10 = helper_a * 0.5
    d__t10 = (0.5) * d_helper_a
    helper__ret0 = _t9
    d_helper__ret0 = d__t9
    helper__ret1 = _t10
    d_helper__ret1 = d__t10
    v3 = helper__ret0
    d_v3 = d_helper__ret0
    v4 = helper__ret1
    d_v4 = d_helper__ret1
    t5 = 0.39
    _t11 = t5 * t5
    _t12 = 1.2 + _t11
    t6 = _t12 ** 0.7
    _t14 = cuda.atomic.min(acc, 0, t6)
    _xc = int64((cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z)) * (cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z) + cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z))
    if _xV0[_xc] == _xS0[0] and _xV0[_xc] != _xI0[0] and _xW0[0] == _xc:
        d_acc[0] = 0
    _t15 = idx[i]
    _t16 = x[_t15]
    d__t16 = d_x[_t15]
    _t17 = abs(_t16)
    d__t17 = (float64(1.0) if _t16 > 0 else -float64(1.0) if _t16 < 0 else float64(0.0)) * d__t16
    t7 = math.sin(_t17)
    d_t7 = (math.cos(_t17)) * d__t17
    sh[t] = t7
    d_sh[t] = d_t7
    cuda.syncthreads()  # line 22
    _t19 = t + 25
    _t20 = _t19 % 32
    _t21 = sh[_t20]
    d__t21 = d_sh[_t20]
    v8 = _t21 * t7
    d_v8 = (t7) * d__t21 + (_t21) * d_t7
    t9 = y[i]
    d_t9 = d_y[i]
    _t24 = t9 * t9
    d__t24 = (t9) * d_t9 + (t9) * d_t9
    _t25 = 1.2 + _t24
    d__t25 = d__t24
    _t26 = x[i]
    d__t26 = d_x[i]
    _t27 = math.sin(_t26)
    d__t27 = (math.cos(_t26)) * d__t26
    _t28 = _t25 ** _t27
    d__t28 = (_t27 * _t25 ** (_t27 - float64(1.0))) * d__t25 + (_t28 * math.log(_t25)) * d__t27
    _t29 = math.cos(_t28)
    d__t29 = (-math.sin(_t28)) * d__t28
    _t30 = x[i]
    d__t30 = d_x[i]
    _t31 = 0.5 * _t30
    d__t31 = (0.5) * d__t30
    _t32 = _t29 + _t31
    d__t32 = d__t29 + d__t31
    _t33 = 0.49 * v3
    d__t33 = (0.49) * d_v3
    _t34 = _t32 + _t33
    d__t34 = d__t32 + d__t33
    _t35 = 0.36 * v4
    d__t35 = (0.36) * d_v4
    _t36 = _t34 + _t35
    d__t36 = d__t34 + d__t35
    _t37 = 0.46 * v8
    d__t37 = (0.46) * d_v8
    _t38 = _t36 + _t37
    d__t38 = d__t36 + d__t37
    out[i] = _t38
    d_out[i] = d__t38
"""

VARIANTS = {
    "as generated": lambda s: s,
    "syncwarp before the barrier": lambda s: s.replace("    cuda.syncthreads()", "    cuda.syncwarp()\n    cuda.syncthreads()"),
    "threadfence_block before the barrier": lambda s: s.replace("    cuda.syncthreads()", "    cuda.threadfence_block()\n    cuda.syncthreads()"),
    "without the winner's store": lambda s: s.replace("        d_acc[0] = 0", "        pass"),
}


def sample(variant: str, k: int) -> dict:
    import importlib.util
    import numpy as np
    from numba import cuda, float64
    path = os.path.join(tempfile.mkdtemp(), f"first_launch_{k}.py")
    with open(path, "w") as f:
        f.write(VARIANTS[variant](KERNEL))
    spec = importlib.util.spec_from_file_location(f"first_launch_{k}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = cuda.jit(module.kernel__forward)

    @cuda.jit
    def scribble(v):
        sh = cuda.shared.array(64, float64)
        sh[cuda.threadIdx.x] = v
        sh[cuda.threadIdx.x + 32] = v
        cuda.syncthreads()

    n, d = 32, cuda.to_device
    rng = np.random.default_rng(0)
    x, y, idx = rng.normal(size=n), rng.normal(size=n), rng.permutation(n).astype(np.int32)
    t6 = (1.2 + 0.39 * 0.39) ** 0.7          # every thread's atomic min value; acc[0] = 2 > t6: a tie
    results = []
    for _ in range(2):
        scribble[1, 32](-7.0)
        out, d_out = cuda.device_array(n), cuda.device_array(n)
        kernel[1, 32](out, d_out, d(x), d(np.ones(n)), d(y), d(np.ones(n)), 0.7, 0.0, d(idx), 6,
                      d(np.array([2.0, 0, 0])), d(np.ones(3)), d(np.zeros(n, np.int32)),
                      d(np.array([t6, 0, 0])), d(np.array([2.0, 0, 0])), d(np.zeros(3, np.int64)),
                      d(np.full(n, t6)))
        results.append(np.concatenate([out.copy_to_host(), d_out.copy_to_host()]))
    return {"variant": variant, "differs_at": np.nonzero(results[0] != results[1])[0].tolist()}


def main(samples: int = 12):
    jobs = [(v, k) for k in range(samples) for v in VARIANTS]

    def run(job):
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--sample", job[0], str(job[1])],
                           capture_output=True, text=True, timeout=300)
        lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else {"variant": job[0], "error": r.stderr[-300:]}

    with ThreadPoolExecutor(min(16, os.cpu_count() or 1)) as pool:
        results = list(pool.map(run, jobs))
    for v in VARIANTS:
        mine = [r for r in results if r["variant"] == v]
        wrong = [r for r in mine if r.get("differs_at")]
        errors = [r for r in mine if "error" in r]
        print(f"{v}: the first launch differs from the second in {len(wrong)} of {len(mine)} fresh processes"
              + (f" (entries {sorted({i for r in wrong for i in r['differs_at']})})" if wrong else "")
              + (f"; {len(errors)} failed: {errors[0]['error']}" if errors else ""))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--sample":
        print(json.dumps(sample(sys.argv[2], int(sys.argv[3]))))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 12)
