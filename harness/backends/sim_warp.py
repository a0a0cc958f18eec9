"""Warp shuffles for numba's CUDA simulator, which has none (`shfl_*_sync` are missing).

Each simulated thread publishes its value in a slot of its block, meets the others at a block
barrier, reads its source lane's slot, and meets them again before the slots are reused. This is
warp-synchronous only in the sense the simulator can offer: every thread of the *block* must
execute the shuffle together, which kernels that shuffle in uniform control flow do.
"""
from __future__ import annotations

import threading

WARP = 32


def _exchange(value):
    me = threading.current_thread()
    slots = me._manager.__dict__.setdefault("_harness_shuffle_slots", {})
    slots[me.thread_id] = value
    me.syncthreads()
    snapshot = dict(slots)
    me.syncthreads()
    return me.thread_id, snapshot


def _read(value, source_lane):
    tid, slots = _exchange(value)
    base = tid - tid % WARP
    if 0 <= source_lane < WARP and base + source_lane in slots:
        return slots[base + source_lane]
    return value                       # out of range: a lane keeps its own value


def shfl_sync(self, mask, value, src_lane):
    return _read(value, int(src_lane) % WARP)


def shfl_up_sync(self, mask, value, delta):
    lane = threading.current_thread().thread_id % WARP
    return _read(value, lane - int(delta) if lane >= delta else lane)


def shfl_down_sync(self, mask, value, delta):
    lane = threading.current_thread().thread_id % WARP
    return _read(value, lane + int(delta) if lane + delta < WARP else lane)


def shfl_xor_sync(self, mask, value, lane_mask):
    lane = threading.current_thread().thread_id % WARP
    return _read(value, lane ^ int(lane_mask))


def activemask(self):
    """The lanes that exist in this thread's warp (a block's last warp may be partial)."""
    me = threading.current_thread()
    bx, by, bz = me._manager._block_dim
    base = me.thread_id - me.thread_id % WARP
    return (1 << min(WARP, bx * by * bz - base)) - 1


def install() -> None:
    from numba.cuda.simulator import kernelapi
    module = kernelapi.FakeCUDAModule
    for name, fn in (("shfl_sync", shfl_sync), ("shfl_up_sync", shfl_up_sync),
                     ("shfl_down_sync", shfl_down_sync), ("shfl_xor_sync", shfl_xor_sync),
                     ("activemask", activemask)):
        if not hasattr(module, name):
            setattr(module, name, fn)
