"""Tolerances and the comparison rule shared by every gradient oracle.

Two kinds of comparison exist:

* vectors (J v from forward mode against finite differences, Jacobian entries): entry k passes when
  |ad_k - ref_k| <= atol + rtol * (|ref_k| + rms(ref over the same argument)).
* scalars that are sums over a state (dot products <w, J v>, <J^T w, v>): see `dot_tolerance`.

docs/oracles.md explains why each term is there. Everything returns a `Comparison`, which knows the
worst entries (ranked by error / tolerance) and the summary metrics the verdicts report.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from harness.model import WorstEntry
from harness.oracles.arrays import f64, top_indices, xp_of
from harness.oracles.names import Names
from harness.policy import GRADIENT_RTOL_ATOL

MAX_WORST = 8
_TINY = np.finfo(np.float64).tiny


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


# Per dtype; the numbers and why they are what they are: harness.policy.GRADIENT_RTOL_ATOL.
DEFAULT_TOLERANCES = {dtype: Tolerance(rtol, atol) for dtype, (rtol, atol) in GRADIENT_RTOL_ATOL.items()}


def default_tolerance(dtype: str | None) -> Tolerance:
    """The per-dtype default; None means float64 (a problem that declares no dtype computes in it)."""
    key = "float64" if dtype is None else str(dtype)
    try:
        return DEFAULT_TOLERANCES[key]
    except KeyError:
        raise ValueError(f"no default gradient tolerance for dtype {dtype!r}; "
                         f"known: {', '.join(DEFAULT_TOLERANCES)} (set rtol and atol explicitly)") from None


def resolve_tolerance(dtype: str | None, rtol: float | None = None, atol: float | None = None) -> Tolerance:
    """Per-case overrides win; whichever of rtol / atol is not given falls back to the dtype default."""
    if rtol is not None and atol is not None:
        tol = Tolerance(float(rtol), float(atol))
    else:
        base = default_tolerance(dtype)
        tol = Tolerance(base.rtol if rtol is None else float(rtol), base.atol if atol is None else float(atol))
    if tol.rtol < 0 or tol.atol < 0 or not (math.isfinite(tol.rtol) and math.isfinite(tol.atol)):
        raise ValueError(f"tolerances must be finite and non-negative, got rtol={tol.rtol}, atol={tol.atol}")
    return tol


def rms(x: np.ndarray) -> float:
    x = f64(x)
    return float(xp_of(x).sqrt((x * x).mean())) if x.size else 0.0


@dataclass
class Comparison:
    """Entrywise comparison results; `labels` says where an entry came from (e.g. the direction).

    Everything over the entries is array work; `names` and `labels` are sequences read only for the
    entries a verdict reports (names.py), so the cost grows with the arrays only through numpy."""
    ad: np.ndarray
    ref: np.ndarray
    tol: np.ndarray
    scale: np.ndarray               # what the relative part of the tolerance multiplies
    rtol: float
    names: Sequence[str]
    labels: Sequence[str] = field(default_factory=list)

    def __post_init__(self):
        self.names = Names.of(self.names)
        self.labels = Names.of(self.labels)

    @cached_property
    def err(self) -> np.ndarray:
        return xp_of(self.ad).abs(self.ad - self.ref)

    @cached_property
    def ratio(self) -> np.ndarray:
        """error / tolerance; NaN or Inf anywhere counts as infinitely bad."""
        err, xp = self.err, xp_of(self.err)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = xp.where(err == 0, 0.0, err / self.tol)
        return xp.where(xp.isfinite(r), r, np.inf)

    @cached_property
    def rel_err(self) -> np.ndarray:
        """Error relative to the scale the rule uses: with rtol > 0, `tol / rtol` (scale plus atol/rtol),
        so an entry passes exactly when rel_err <= rtol; never infinite for a finite error."""
        if self.rtol > 0:
            den = self.tol / self.rtol
        else:
            den = self.scale
        return self.err / xp_of(den).maximum(den, _TINY)

    @cached_property
    def bad(self) -> np.ndarray:
        return ~(self.err <= self.tol)       # NaN compares False, so NaN is bad

    @property
    def ok(self) -> bool:
        return not bool(self.bad.any())

    @property
    def n(self) -> int:
        return int(self.ad.size)

    @property
    def n_bad(self) -> int:
        return int(xp_of(self.bad).count_nonzero(self.bad))

    def _max(self, values: np.ndarray) -> float:
        if not values.size:
            return 0.0
        top = float(values.max())         # NaN propagates through max
        return float("nan") if math.isnan(top) else top

    @property
    def max_abs_err(self) -> float:
        return self._max(self.err)

    @property
    def max_rel_err(self) -> float:
        return self._max(self.rel_err)

    @property
    def worst_ratio(self) -> float:
        return self._max(self.ratio)

    def order(self, among: np.ndarray | None = None, limit: int | None = None) -> np.ndarray:
        """Host indices from worst to best (ties keep state order): of every entry, or of the
        indices `among`; with `limit`, only the first `limit` of that order (found without a full sort)."""
        size = self.n if among is None else int(among.size)
        return top_indices(self.ratio, size if limit is None else min(limit, size), among)

    def worst(self, limit: int = MAX_WORST, *, dedupe: bool = True, only_bad: bool = False) -> list[WorstEntry]:
        """The `limit` worst entries; with dedupe, an entry name appears once (its worst occurrence),
        so several directions failing at the same element do not crowd out other elements. Only
        candidates are ranked and named: a few times `limit`, more only when names repeat."""
        return [entry for _, _, entry in self.ranked(limit, dedupe=dedupe, only_bad=only_bad)]

    def ranked(self, limit: int = MAX_WORST, *, dedupe: bool = True,
               only_bad: bool = False) -> list[tuple[int, float, WorstEntry]]:
        """worst() with each entry's index and error/tolerance ratio: (index, ratio, entry)."""
        if limit < 1:
            return []
        among = xp_of(self.bad).flatnonzero(self.bad) if only_bad else None
        total = self.n if among is None else int(among.size)
        out, seen, want = [], set(), 4 * limit
        while True:
            candidates = self.order(among, min(want, total))
            out, seen = [], set()
            for i in candidates:
                name = self.names[i]
                if dedupe and name in seen:
                    continue
                seen.add(name)
                out.append((int(i), float(self.ratio[i]),
                            WorstEntry(index=name, ad=float(self.ad[i]), fd=float(self.ref[i]),
                                       abs_err=float(self.err[i]), rel_err=float(self.rel_err[i]))))
                if len(out) >= limit:
                    return out
            if candidates.size >= total:
                return out
            want *= 4

    def worst_index(self) -> int | None:
        return int(self.ratio.argmax()) if self.n else None   # the first of the worst

    def metrics(self) -> dict:
        return {"max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
                "worst_ratio": self.worst_ratio, "n_bad": self.n_bad, "n": self.n}

    @staticmethod
    def concat(parts: list["Comparison"]) -> "Comparison":
        if not parts:
            empty = np.zeros(0)
            return Comparison(empty, empty, empty, empty, 0.0, [], [])
        xp = xp_of(parts[0].ad)
        cat = lambda attr: xp.concatenate([getattr(p, attr) for p in parts])   # noqa: E731
        return Comparison(cat("ad"), cat("ref"), cat("tol"), cat("scale"), parts[0].rtol,
                          Names.concat([p.names for p in parts]), Names.concat([p.labels for p in parts]))


@dataclass(frozen=True)
class Entry:
    """One entry of a comparison, as the host sees it: for a failure message."""
    name: str
    label: str
    ad: float
    ref: float
    err: float
    tol: float


class Comparisons:
    """Several comparisons taken one at a time, each summarized and then freed, reported as if
    they were one concatenated Comparison (the same metrics, worst entries and first worst entry):
    the forward FD check compares direction by direction, so at most one direction's arrays are
    alive at once."""

    def __init__(self, limit: int = MAX_WORST):
        self.limit, self.n, self.n_bad = limit, 0, 0
        self._maxima = {"max_abs_err": [], "max_rel_err": [], "worst_ratio": []}
        self._ranked: dict[bool, list] = {False: [], True: []}    # only_bad -> (ratio, part, index, entry)
        self.top: Entry | None = None                             # the first entry of the worst ratio
        self._top_ratio = -1.0

    def add(self, comp: Comparison) -> None:
        part = len(self._maxima["worst_ratio"])
        self.n += comp.n
        self.n_bad += comp.n_bad
        for key, value in (("max_abs_err", comp.max_abs_err), ("max_rel_err", comp.max_rel_err),
                           ("worst_ratio", comp.worst_ratio)):
            self._maxima[key].append(value)
        for only_bad in (False, True):
            if only_bad and not comp.n_bad:
                continue
            self._ranked[only_bad] += [(ratio, part, i, entry) for i, ratio, entry in
                                       comp.ranked(self.limit, only_bad=only_bad)]
        if comp.n and comp.worst_ratio > self._top_ratio:
            i = comp.worst_index()
            self._top_ratio = comp.worst_ratio
            self.top = Entry(comp.names[i], comp.labels[i], float(comp.ad[i]), float(comp.ref[i]),
                             float(comp.err[i]), float(comp.tol[i]))

    @property
    def ok(self) -> bool:
        return self.n_bad == 0

    def _max(self, key: str) -> float:
        values = self._maxima[key]
        return float("nan") if any(math.isnan(v) for v in values) else max(values, default=0.0)

    @property
    def max_abs_err(self) -> float:
        return self._max("max_abs_err")

    @property
    def max_rel_err(self) -> float:
        return self._max("max_rel_err")

    @property
    def worst_ratio(self) -> float:
        return self._max("worst_ratio")

    def worst(self, limit: int | None = None, *, only_bad: bool = False) -> list[WorstEntry]:
        """Worst first (ties in the order of the parts, then of their entries), each name once."""
        out, seen = [], set()
        for _, _, _, entry in sorted(self._ranked[only_bad], key=lambda r: (-r[0], r[1], r[2])):
            if entry.index not in seen:
                seen.add(entry.index)
                out.append(entry)
        return out[:limit or self.limit]

    def metrics(self) -> dict:
        return {"max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
                "worst_ratio": self.worst_ratio, "n_bad": self.n_bad, "n": self.n}


def compare_vectors(ad: np.ndarray, ref: np.ndarray, tol: Tolerance, names: Sequence[str], *,
                    blocks: list[tuple[int, int]] | None = None, label: str = "",
                    labels: Sequence[str] | None = None) -> Comparison:
    """tol_k = atol + rtol * (|ref_k| + rms(ref over k's block)).

    A block is one argument's slice of the flat state: an argument's own magnitude sets the noise
    floor for its entries, so a large array cannot hide a wrong gradient in a small one. `names`
    may be any sequence (entry_names builds each name only when it is read); `labels`, one per
    entry, replaces the single `label`.
    """
    xp = xp_of(ad, ref)
    ad = f64(ad, xp).reshape(-1)
    ref = f64(ref, xp).reshape(-1)
    if ad.shape != ref.shape:
        raise ValueError(f"cannot compare vectors of {ad.size} and {ref.size} entries")
    scale = xp.abs(ref)
    finite = xp.isfinite(ref)
    for start, stop in (blocks or [(0, ref.size)]):
        part = ref[start:stop]
        ok = finite[start:stop]
        n = int(xp.count_nonzero(ok))
        if n:
            squares = xp.where(ok, part, 0.0)
            squares *= squares
            scale[start:stop] += math.sqrt(float(squares.sum()) / n)
    labels = Names.repeated(label, ad.size) if labels is None else labels
    return Comparison(ad, ref, tol.atol + tol.rtol * scale, scale, tol.rtol, names, labels)


# Entries per piece of a long comparison: each piece's few temporaries (error, tolerance, ratio,
# ...) are 128 MB of float64 however long the state, and are freed before the next piece.
PIECE = 1 << 24


def _block_rms(part, xp, piece: int) -> float | None:
    """rms over the finite entries of `part`, None when there are none; summed piece by piece
    (one piece when it fits, so a short block sums exactly as compare_vectors does)."""
    total, count = 0.0, 0
    for a in range(0, part.size, piece):
        chunk = part[a:a + piece]
        ok = xp.isfinite(chunk)
        n = int(xp.count_nonzero(ok))
        if n:
            squares = xp.where(ok, chunk, 0.0)
            squares *= squares
            total += float(squares.sum())
            count += n
    return math.sqrt(total / count) if count else None


def compare_in_pieces(ad, ref, tol: Tolerance, names: Sequence[str], *, into: Comparisons,
                      blocks: list[tuple[int, int]] | None = None, label: str = "", piece: int | None = None) -> Comparisons:
    """compare_vectors' rule (rms per block), compared piece by piece into `into`: the same verdict
    and report, with the temporaries of one piece alive at a time."""
    xp = xp_of(ad, ref)
    ad = f64(ad, xp).reshape(-1)
    ref = f64(ref, xp).reshape(-1)
    if ad.shape != ref.shape:
        raise ValueError(f"cannot compare vectors of {ad.size} and {ref.size} entries")
    names, piece = Names.of(names), piece or PIECE
    for start, stop in (blocks or [(0, ref.size)]):
        rms_ = _block_rms(ref[start:stop], xp, piece)
        for a in range(start, stop, piece):
            b = min(a + piece, stop)
            scale = xp.abs(ref[a:b])
            if rms_ is not None:
                scale += rms_
            into.add(Comparison(ad[a:b], ref[a:b], tol.atol + tol.rtol * scale, scale, tol.rtol,
                                names.window(a, b - a), Names.repeated(label, b - a)))
    return into


def dot_tolerance(a: float, b: float, *, weight_norm: float, scale: float, tol: Tolerance) -> float:
    """Tolerance for two estimates a, b of one sum over a state of n entries:

        atol * weight_norm + rtol * (|a| + |b| + scale)

    `weight_norm` is the 2-norm of the exact vector(s) the inexact AD vector is dotted with (for a
    standard normal direction, about sqrt(n)): an entrywise error of atol, of unrelated signs,
    grows like a random walk. `scale` is ||x|| ||y|| / sqrt(n) for the dot <x, y>: the typical size
    of such a sum, and of the accumulated roundoff of entrywise errors relative to rms(x), even when
    the sum itself cancels to nearly zero.
    """
    return tol.atol * weight_norm + tol.rtol * (abs(a) + abs(b) + scale)


def dot_scale(x: np.ndarray, y: np.ndarray) -> float:
    """||x|| ||y|| / sqrt(n): the magnitude of <x, y> for unrelated x and y of n entries."""
    n = max(int(x.size if hasattr(x, "size") else np.size(x)), 1)
    return float(np.linalg.norm(x) * np.linalg.norm(y) / math.sqrt(n))


def compare_dots(ad: list[float], ref: list[float], *, weight_norms: list[float], scales: list[float],
                 tol: Tolerance, names: list[str]) -> Comparison:
    """Scalar sums against references, one per direction, each with its own `dot_tolerance`."""
    ad_a = np.asarray(ad, dtype=np.float64)
    ref_a = np.asarray(ref, dtype=np.float64)
    scale = np.abs(ad_a) + np.abs(ref_a) + np.asarray(scales, dtype=np.float64)
    tols = np.array([dot_tolerance(float(x), float(y), weight_norm=wn, scale=s, tol=tol)
                     for x, y, wn, s in zip(ad_a, ref_a, weight_norms, scales)], dtype=np.float64)
    return Comparison(ad_a, ref_a, tols, scale, tol.rtol, list(names), list(names))
