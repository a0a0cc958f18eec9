"""A GPU's launch rules for numba's CUDA simulator, and hung launches that can be stopped.

The simulator runs each block as Python threads supervised by a `BlockManager`. As shipped it
accepts any block and grid size, releases a barrier once every *living* thread waits at it (so a
barrier that half the block skips passes, where a GPU hangs or corrupts memory), and leaves its
threads running when the launch is abandoned (a hung kernel keeps spinning beside every later run
of the process). `install()` replaces `BlockManager.run` with a supervisor that:

- refuses blocks of more than 1024 threads (x, y <= 1024, z <= 64) and grids beyond CUDA's limits
  (x < 2**31, y and z <= 65535; every dimension >= 1) with a KernelError, as a GPU refuses them;
- raises KernelFaultError when a barrier is reached by only some threads of a block (the others
  finished) or when the threads of a block wait at different barriers (different lines);
- on any exception in the supervising thread (the run's time limit, a fault in one thread) stops
  every thread of the block: barrier waiters are released with the abort flag, running threads get
  an asynchronous exception; a thread that cannot be stopped (blocked in C) marks the process as
  unusable (`stuck_threads`), so an xdist worker retires and a fresh one takes its place.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

import numpy as np

from harness.core.errors import KernelError, KernelFaultError
from harness.core.gpu_limits import MAX_BLOCK_DIMS, MAX_BLOCK_THREADS, MAX_GRID_DIMS

STOP_GRACE_S = 5.0

# Threads that were not stopped within the grace period, process-wide: the backend reports itself
# unusable while any of them is still alive (a late one that ends after all clears the state).
stuck_threads: list[threading.Thread] = []


def still_stuck() -> list[threading.Thread]:
    stuck_threads[:] = [t for t in stuck_threads if t.is_alive()]
    return stuck_threads

_SIMULATOR_DIR = None            # process-wide: where the installed numba's simulator lives
_INTERNAL_FILES = {os.path.abspath(__file__.replace("sim_block", "sim_warp"))}


class _Stopped(SystemExit):
    """Raised inside a simulator thread to end it; SystemExit, so threading stays silent and the
    simulator's own `except Exception` does not swallow it."""


def check_launch_dims(grid: tuple, block: tuple) -> None:
    grid = tuple(int(n) for n in grid) + (1,) * (3 - len(grid))     # plain ints: the messages show them
    block = tuple(int(n) for n in block) + (1,) * (3 - len(block))
    if int(np.prod(block)) > MAX_BLOCK_THREADS:
        raise KernelError(f"launch refused: a block of {int(np.prod(block))} threads {block}; a GPU "
                          f"allows at most {MAX_BLOCK_THREADS} threads per block")
    for axis, (n, most) in enumerate(zip(block, MAX_BLOCK_DIMS)):
        if not 1 <= n <= most:
            raise KernelError(f"launch refused: block dimension {'xyz'[axis]} = {n} is outside "
                              f"1..{most} (block {block})")
    for axis, (n, most) in enumerate(zip(grid, MAX_GRID_DIMS)):
        if not 1 <= n <= most:
            raise KernelError(f"launch refused: grid dimension {'xyz'[axis]} = {n} is outside "
                              f"1..{most} (grid {grid})")


def _barrier_site() -> tuple[str, int] | None:
    """File and line of the kernel code that called the barrier (None: the harness's own warp
    emulation, whose block-wide barriers are not the kernel's)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if filename in _INTERNAL_FILES:
            return None
        if not filename.startswith(_SIMULATOR_DIR) and filename != os.path.abspath(__file__):
            return filename, frame.f_lineno
        frame = frame.f_back
    return None


def _stop(threads) -> None:
    for t in threads:
        t.abort = True
        t.syncthreads_blocked = False
        t.syncthreads_event.set()
    deadline = time.monotonic() + STOP_GRACE_S
    # The time limit can fire inside `Thread.start()` while the block's threads are being created
    # (a slow, loaded start): that thread may begin running only now, or never. Wait for it within
    # the grace period so it gets the stop signal too; one that never started needs no stopping.
    for t in threads:
        t._started.wait(max(0.0, deadline - time.monotonic()))
    for t in threads:
        if t.is_alive() and t.ident is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(_Stopped))
    for t in threads:
        if t._started.is_set():
            t.join(max(0.0, deadline - time.monotonic()))
    stuck_threads.extend(t for t in threads if t.is_alive())


def _describe(site) -> str:
    return f"{os.path.basename(site[0])}:{site[1]}" if site else "a warp operation"


def _supervise(manager, threads) -> None:
    live, blocked = set(threads), set()
    while live:
        for t in live:
            if t.syncthreads_blocked:
                blocked.add(t)
            elif t.exception:
                raise t.exception[0].with_traceback(t.exception[1])
        if blocked and live == blocked:
            sites = {t._harness_site for t in blocked}
            kernel_sites = {s for s in sites if s is not None}
            if len(blocked) < len(threads) and kernel_sites:
                raise KernelFaultError(
                    f"diverging barrier: the barrier at {_describe(next(iter(kernel_sites)))} was reached by "
                    f"{len(blocked)} of {len(threads)} threads of block {tuple(manager._grid_point)}; the "
                    "others finished without reaching it (a GPU hangs or corrupts memory here)")
            if len(kernel_sites) > 1:
                counts = ", ".join(f"{_describe(s)} ({sum(t._harness_site == s for t in blocked)} threads)"
                                   for s in sorted(kernel_sites))
                raise KernelFaultError(f"diverging barrier: threads of block {tuple(manager._grid_point)} "
                                       f"wait at different barriers: {counts}")
            for t in blocked:
                t.syncthreads_blocked = False
                t.syncthreads_event.set()
            blocked = set()
        live = {t for t in live if t.is_alive()}
    for t in threads:
        if t.exception:
            raise t.exception[0].with_traceback(t.exception[1])


def _run(self, grid_point, *args):
    from numba.cuda.simulator.kernel import BlockThread
    check_launch_dims(self._grid_dim, self._block_dim)
    self._grid_point = grid_point
    threads = []
    try:
        for block_point in np.ndindex(*self._block_dim):
            def target():
                try:
                    self._f(*args)
                except _Stopped:
                    pass                      # stopped from outside: end quietly
            t = BlockThread(target, self, grid_point, block_point, self._debug)
            t._harness_site = None
            threads.append(t)
            t.start()
        _supervise(self, threads)
    except BaseException:
        _stop(threads)
        raise


def _syncthreads(self):
    self._harness_site = _barrier_site()
    _original_syncthreads(self)


_original_syncthreads = None     # process-wide: the simulator is patched once per process, as numba is loaded once


def install() -> None:
    global _SIMULATOR_DIR, _original_syncthreads
    from numba.cuda.simulator import kernel
    if getattr(kernel.BlockManager.run, "_harness", False):
        return
    _SIMULATOR_DIR = os.path.dirname(os.path.abspath(kernel.__file__))
    _original_syncthreads = kernel.BlockThread.syncthreads
    _run._harness = True
    kernel.BlockManager.run = _run
    kernel.BlockThread.syncthreads = _syncthreads
