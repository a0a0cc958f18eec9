"""Front ends that generate kernels and launch them through the engine (harness/engine).

broadcast: `broadcast(f, *args)`, `broadcast_into(f, dest, *args)` and `map_(f, dest, *args)` apply a
scalar device function elementwise, as an array library's broadcast does (numpy shape rules,
split or packed kernel arguments, constant folding of types and functions).
"""
from harness.broadcast.frontend import BroadcastLauncher, broadcast, broadcast_into, launcher_for, map_

__all__ = ["BroadcastLauncher", "broadcast", "broadcast_into", "launcher_for", "map_"]
