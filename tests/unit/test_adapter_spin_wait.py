"""A `while` loop polling atomics (a spin lock) is refused for Warp and Taichi, whose CPU backends
give a launch's threads no forward progress (harness/adapters/translate.py: _polls_atomics; the
Warp run of SpeechBrain's cu_kernel_backward hung)."""
import ast

import pytest

from harness.adapters.translate import _polls_atomics


def _loop(text: str) -> ast.While:
    return ast.parse(text).body[0]


@pytest.mark.parametrize("text", [
    "while cuda.atomic.add(lock, i, 0) < 0:\n    pass",                                   # the test itself
    "while True:\n    if cuda.atomic.add(lock, i, 0) >= 0:\n        break",               # an if inside
    "while True:\n    old = cuda.atomic.cas(lock, 0, 0, 1)\n    if old == 0:\n        break",  # through a name
    "while not done:\n    v = cuda.atomic.add(flag, 0, 0)\n    done = v > 0",             # computed from one
])
def test_a_loop_polling_an_atomic_is_a_spin_wait(text):
    assert _polls_atomics(_loop(text))


def test_a_loop_that_accumulates_or_takes_tickets_is_not():
    assert not _polls_atomics(_loop("while k < n:\n    cuda.atomic.add(out, k, x[k])\n    k += 1"))
    assert not _polls_atomics(_loop("while k < n:\n    t = cuda.atomic.add(cnt, 0, 1)\n    out[t] = x[k]\n    k += 1"))
    # a work queue: each ticket advances the counter, whatever the other threads do
    assert not _polls_atomics(_loop("while True:\n    t = cuda.atomic.add(cnt, 0, 1)\n    if t >= n:\n        break"))
    assert not _polls_atomics(_loop("while cuda.atomic.add(cnt, 0, 1) < n:\n    pass"))
