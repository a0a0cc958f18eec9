"""Root conftest: registers the harness plugin and pins each xdist worker to one GPU.

The pinning must happen at import time, before anything initialises CUDA: worker gwN gets the N-th
entry of the caller's visible devices (PCI bus order), or the N-th device when none were listed.
"""
import os


def _pin_worker_to_gpu() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return
    visible = [d for d in os.environ.get("HARNESS_GPUS", os.environ.get("CUDA_VISIBLE_DEVICES", "")).split(",") if d]
    n = int(worker[2:])
    os.environ.setdefault("HARNESS_GPUS", ",".join(visible))
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    if visible:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible[n % len(visible)]
    elif os.environ.get("HARNESS_GPU_COUNT"):
        os.environ["CUDA_VISIBLE_DEVICES"] = str(n % int(os.environ["HARNESS_GPU_COUNT"]))


_pin_worker_to_gpu()

# Where the harness is installed (pip install -e ., tox) pytest has these already through the pytest11
# entry points, which are named as the modules so that this line finds them registered and adds
# nothing; from a bare checkout (PYTHONPATH=$PWD) it registers them.
pytest_plugins = ["harness.session.plugin", "harness.session.shard"]
