"""Names of flat-state entries (`out[3]`, `x[1,2]`, `a`), built only for the entries a verdict
reports: a 2^24-element state must not cost 2^24 Python strings.

`Names` is a read-only sequence made of blocks, each a length and a function from an index within
the block to its name; concatenating two is concatenating their block lists.
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Callable

import numpy as np


class Names(Sequence):
    def __init__(self, blocks: list[tuple[int, Callable[[int], str]]] = ()):
        self._blocks = [(int(n), get) for n, get in blocks if n]
        self._starts, at = [], 0
        for n, _ in self._blocks:
            self._starts.append(at)
            at += n
        self._len = at

    @staticmethod
    def of(names) -> "Names":
        """`names` as Names: itself, or a list (or any sequence) wrapped without copying."""
        if isinstance(names, Names):
            return names
        seq = names if isinstance(names, Sequence) and not isinstance(names, str) else list(names)
        return Names([(len(seq), seq.__getitem__)])

    @staticmethod
    def repeated(name: str, n: int) -> "Names":
        return Names([(n, lambda _i: name)])

    @staticmethod
    def concat(parts) -> "Names":
        return Names([b for p in parts for b in Names.of(p)._blocks])

    def __len__(self) -> int:
        return self._len

    def window(self, start: int, n: int) -> "Names":
        """Entries start .. start + n - 1, renumbered from 0 (a piece of a long comparison)."""
        if start == 0 and n == self._len:
            return self
        return Names([(n, lambda i: self[start + i])])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._len))]
        i = int(i)
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(f"entry {i} of {self._len}")
        b = bisect.bisect_right(self._starts, i) - 1
        return self._blocks[b][1](i - self._starts[b])

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __repr__(self) -> str:
        head = ", ".join(repr(self[k]) for k in range(min(3, self._len)))
        return f"Names([{head}{', ...' if self._len > 3 else ''}] of {self._len})"


def array_entry_names(name: str, shape: tuple) -> Names:
    """`name[i,j]` for every entry of an array of `shape` in C order; `name` for a scalar."""
    shape = tuple(int(s) for s in shape)
    if not shape:
        return Names([(1, lambda _i: name)])

    def get(i: int) -> str:
        return f"{name}[{','.join(str(int(k)) for k in np.unravel_index(i, shape))}]"
    return Names([(int(np.prod(shape)), get)])
