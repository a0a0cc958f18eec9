"""A case tagged gpu-scale (harness/policy.py: GPU_SCALE_TAG) is sized for a GPU: its runs are SKIP
on the simulator with the reason, and run as any other on the tiers that compile or launch."""
from __future__ import annotations

KERNEL = '''\
from numba import cuda


def square(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * x[i]
'''

CASE = """\
id: sized-for-a-gpu
kernel: kernels/k.py:square
launch: {threads: 8, block: 8}
args:
  out: {array: {shape: [8], dtype: float64}, activity: duplicated}
  x: {array: {shape: [8], dtype: float64, init: normal}, activity: duplicated}
modes: [primal, forward]
variants:
  small:
    tags: [small]
"""


def test_gpu_scale_runs_are_skipped_on_the_simulator_only(tmp_path, launching_backend):
    from harness.cases import expand_runs, load_case_file
    from harness.execution.runner import Runner
    from harness.policy import GPU_SCALE_REASON, GPU_SCALE_TAG, State
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(KERNEL)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "c.yaml").write_text(CASE.replace("modes:", f"tags: [{GPU_SCALE_TAG}]\nmodes:", 1))
    runner = Runner(tmp_path, launching_backend.name)
    states = {}
    for case in load_case_file(tmp_path / "cases" / "c.yaml", tmp_path):
        for run in expand_runs(case, launching_backend.name):
            o = runner.execute(run)
            states[run.run_id.split("::")[1]] = (o.state, o.message)
    tagged = {k: v for k, v in states.items() if not k.startswith("small-")}
    untagged = {k: v for k, v in states.items() if k.startswith("small-")}   # the variant's own tags replace them
    assert len(tagged) == 2 and len(untagged) == 2, states
    assert all(state == State.PASS for state, _ in untagged.values()), untagged
    if launching_backend.name == "sim":
        assert all(v == (State.SKIP, GPU_SCALE_REASON) for v in tagged.values()), tagged
    else:
        assert all(state == State.PASS for state, _ in tagged.values()), tagged
