"""Native Warp kernel after a public bug report: forward kinematics through two nested dynamic loops.

Source: https://github.com/NVIDIA/warp/issues/1293 ("Incorrect gradients with nested dynamic-range
loops in reverse-mode AD", closed; Warp is Apache-2.0). Reported: with two dynamic-range loops
nested in a kernel the forward pass is right and tape.backward() gives 2x the right gradient for the
outer variable.
What is the report's: `_apply_joint` whole, and the kernel's signature and its lines up to
`p = body_off[bid]` (the stored report text ends there).
Edits: the rest of the kernel is written for the harness after the report's description (the
report's own remainder is not stored): each body's pose is its parent's pose moved by the body
offset, then its joints are applied in an inner dynamic loop `for j in range(jntnum[bid])`.
"""
import warp as wp


@wp.func
def _apply_joint(xpos: wp.vec3, xquat: wp.quat, angle: float, axis: wp.vec3):
    half = angle * 0.5
    qloc = wp.quat(axis[0] * wp.sin(half), axis[1] * wp.sin(half), axis[2] * wp.sin(half), wp.cos(half))
    xquat = xquat * qloc
    return xpos, xquat


@wp.kernel
def loop_kernel(
    branch_ids: wp.array(dtype=int), branch_starts: wp.array(dtype=int),
    parent: wp.array(dtype=int), jntnum: wp.array(dtype=int),
    jntadr: wp.array(dtype=int), jnt_axis: wp.array(dtype=wp.vec3),
    body_off: wp.array(dtype=wp.vec3), qpos: wp.array2d(dtype=float),
    xpos: wp.array2d(dtype=wp.vec3), xquat: wp.array2d(dtype=wp.quat),
):
    worldid, branchid = wp.tid()
    start = branch_starts[branchid]
    end = branch_starts[branchid + 1]
    q = qpos[worldid]
    for i in range(start, end):
        bid = branch_ids[i]
        pid = parent[bid]
        p = body_off[bid]
        # written for the harness (see the module's doc)
        rot = xquat[worldid, pid]
        pos = xpos[worldid, pid] + wp.quat_rotate(rot, p)
        for j in range(jntnum[bid]):
            adr = jntadr[bid] + j
            pos, rot = _apply_joint(pos, rot, q[adr], jnt_axis[adr])
        xpos[worldid, bid] = pos
        xquat[worldid, bid] = rot


@wp.kernel
def loop_kernel_static_inner(
    branch_ids: wp.array(dtype=int), branch_starts: wp.array(dtype=int),
    parent: wp.array(dtype=int), jntnum: wp.array(dtype=int),
    jntadr: wp.array(dtype=int), jnt_axis: wp.array(dtype=wp.vec3),
    body_off: wp.array(dtype=wp.vec3), qpos: wp.array2d(dtype=float),
    xpos: wp.array2d(dtype=wp.vec3), xquat: wp.array2d(dtype=wp.quat),
):
    # The control, written for the harness: loop_kernel with the inner loop's trip count a constant
    # (Warp unrolls it) and the joint count a condition, so only the outer loop is dynamic.
    worldid, branchid = wp.tid()
    start = branch_starts[branchid]
    end = branch_starts[branchid + 1]
    q = qpos[worldid]
    for i in range(start, end):
        bid = branch_ids[i]
        pid = parent[bid]
        p = body_off[bid]
        rot = xquat[worldid, pid]
        pos = xpos[worldid, pid] + wp.quat_rotate(rot, p)
        for j in range(2):
            if j < jntnum[bid]:
                adr = jntadr[bid] + j
                pos, rot = _apply_joint(pos, rot, q[adr], jnt_axis[adr])
        xpos[worldid, bid] = pos
        xquat[worldid, bid] = rot
