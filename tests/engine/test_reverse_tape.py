"""What the reverse kernel of a loop with barriers keeps (emission/replay_needs.py, emit_loops.py):
only the values its adjoints read are taped and replayed, a register every thread of the block
holds alike is taped once per block in shared memory, the replay keeps a barrier only after the
shared tiles it rebuilds, and a shared shadow one thread per element touches between barriers
takes plain adds. Read from the generated source the way a launch produces it (Engine.prepare);
the gradients are checked against finite differences by cases/barrier-uniform-loops.yaml,
cases/barrier-tiled-matmul.yaml and cases/barrier-shared-replay.yaml."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from harness.core.activity import Duplicated
from tests.conftest import ROOT


def _reverse_source(engine, backend, ref: str, n: int, block: int, out: int = 1, dtype=np.float64) -> str:
    from harness.cases.inputs import load_kernel
    from harness.engine.runtime.launch import LaunchConfig
    rng = np.random.default_rng(0)
    args = [Duplicated(backend.asarray(np.zeros(out, dtype)), backend.asarray(np.ones(out, dtype))),
            Duplicated(backend.asarray(rng.standard_normal(n).astype(dtype)), backend.asarray(np.zeros(n, dtype)))]
    plan, _ = engine.prepare(load_kernel(ref, ROOT), LaunchConfig.threads(n, block), args, "reverse")
    return Path(plan.source_path).read_text()


def _reverse_loop(text: str) -> str:
    """The body of the reverse sweep's loop over the taped iterations."""
    reverse = text.partition("# reverse sweep")[2]
    start = re.search(r"^( *)for _r\d+ in range\(.*$", reverse, re.M)
    indent = len(start.group(1))
    body = []
    for line in reverse[start.end():].splitlines()[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return "\n".join(body)


def test_a_linear_tree_level_tapes_nothing_per_thread_and_adds_without_atomics(engine, backend):
    text = _reverse_source(engine, backend, "kernels/tiled.py:tree_sum_while", 512, 256, dtype=np.float32)
    assert "cuda.local.array" not in text                 # the level's two reads are not taped
    assert re.search(r"_tape_stride_1 = cuda\.shared\.array\(\d+, int64\)", text)
    assert re.search(r"if _tape_writer:\n\s+_tape_stride_1\[_n1\] = stride_1", text)
    assert "cuda.atomic.add(d_sh" not in text
    loop = _reverse_loop(text)
    # one barrier per level: the mirrored one (the replay stores nothing in shared memory)
    assert loop.count("cuda.syncthreads()") == 1 and "(mirrored)" in loop
    assert "sh[" not in loop.replace("d_sh[", "")         # the replay reads no shared memory


def test_a_product_in_the_level_tapes_the_reads_its_partials_use(engine, backend):
    """sm[t] += sm[t + s] * sm[t + s]: the two reads of sm[t + s] feed the product's partials and
    are taped; the read of sm[t] only feeds a sum and is neither taped nor replayed."""
    text = _reverse_source(engine, backend, "kernels/barriers.py:tree_sum_halving", 128, 64, out=2)
    taped = set(re.findall(r"(_tape_\w+) = cuda\.local\.array", text))
    forward = text.partition("# reverse sweep")[0]
    own = re.search(r"(_t\d+) = sm\[tid\]", forward).group(1)
    others = re.findall(r"(_t\d+) = sm\[_t\d+\]", forward)
    assert taped == {f"_tape{name}" for name in others} and len(others) == 2
    assert f"_tape{own}" not in text
    assert not re.search(rf"^\s*{own} = ", _reverse_loop(text), re.M)


def test_a_sum_every_thread_reads_keeps_its_atomic(engine, backend):
    text = _reverse_source(engine, backend, "kernels/barriers.py:tree_then_normalize", 128, 64, out=128)
    assert "cuda.atomic.add(d_sm, 0," in text


def test_a_tape_too_large_for_shared_memory_stays_per_thread(backend):
    """The per-block tape takes at most emit_loops.BLOCK_TAPE_BYTES of shared memory: with a
    tape of 2048 iterations the stride's tape (16 KiB) stays in local memory."""
    from harness.engine.emission.emit_loops import BLOCK_TAPE_BYTES
    from harness.engine.runtime.launch import Engine, EngineOptions
    assert 8 * 2048 > BLOCK_TAPE_BYTES
    text = _reverse_source(Engine(backend, EngineOptions(tape_size=2048)), backend,
                           "kernels/tiled.py:tree_sum_while", 512, 256, dtype=np.float32)
    assert re.search(r"_tape_stride_1 = cuda\.local\.array\(2048, int64\)", text)
    assert "_tape_writer" not in text
