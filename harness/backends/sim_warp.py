"""Warp shuffles for numba's CUDA simulator, which has none (`shfl_*_sync` are missing).

Each simulated thread publishes its value in a slot of its block, meets the others at a block
barrier and reads its source lane's slot. Consecutive shuffles alternate between two sets of
slots, so one barrier per shuffle suffices: a thread writes a set again two shuffles later, after
the barrier of the shuffle between, which every thread reaches only once it has read the set.
This is warp-synchronous only in the sense the simulator can offer: every thread of the *block*
must execute the shuffle together, which kernels that shuffle in uniform control flow do.
"""
from __future__ import annotations

import threading

WARP = 32


def _exchange(value):
    me = threading.current_thread()
    state = me._manager.__dict__               # one block's: a fresh manager runs each block
    sets = state.setdefault("_harness_shuffle_slots", ({}, {}))
    counts = state.setdefault("_harness_shuffle_counts", {})
    k = counts.get(me.thread_id, 0)
    counts[me.thread_id] = k + 1
    slots = sets[k % 2]
    slots[me.thread_id] = value
    me.syncthreads()
    return me.thread_id, slots


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
