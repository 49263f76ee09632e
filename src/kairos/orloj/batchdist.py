"""Batch latency: the affine batch-time model g_k and the distribution of a batch's slowest member.

A batch of dynamic requests is padded to its longest member (Eq 4.4), so its time is
L_B = g_k(max_r X_r) with g_k(l) = a_k + s_k·l (spec 3.2). The maximum of independent members
has CDF Π_i F_i (Eq 4.6 for identical members); Eq 4.8 of the dissertation is the same thing
written as an alternating sum over 2^k subsets, kept here only as a test oracle.

Because each F_i is piecewise linear on the shared grid, Π F_i is a polynomial of degree k in
each cell: the max-histogram's masses are exact at the edges and E[max] = ∫(1 − Π F_i) is exact
with ⌈(k+1)/2⌉ Gauss–Legendre nodes per cell (the text warns that the coarse discrete
histogram alone is too inaccurate for E[max]; this is the resolution, spec 3.3).

Who fills the other k−1 slots is unknown when a request is scored (the circular dependency of
§4.4.3); `batch_dists` precomputes one L_B per (app, batch size) under `BatchMode`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from math import ceil, factorial
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict, Field

from kairos.orloj.dist import FloatArray, Histogram

BatchMode = Literal["own+mixture", "mixture", "cyclic"]
FitForm = Literal["affine", "paper", "table"]
MIXTURE_KEY = "__mixture__"  # the key of requests whose app has no histogram (yet)
Factors = Sequence[tuple[Histogram, int]]  # (member distribution, how many such members)


class BatchLatencyModel(BaseModel):
    """g_k(l) = a_k + s_k·l: a_k = c0, s_k = c_fix + c1·k unless `table` gives (a_k, s_k).

    Defaults (c0 = 0.5 ms, c_fix = 0.9, c1 = 0.1) make g_1(l) ≈ l and a batch of 16 cost
    2.5x its longest member. The dissertation's Eq 4.3 is c_fix = 0 (`paper`), which makes a
    batch of one cost c0 + c1·l rather than l.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    c0: float = Field(0.5, ge=0)
    c_fix: float = Field(0.9, ge=0)
    c1: float = Field(0.1, ge=0)
    table: dict[int, tuple[float, float]] | None = None

    @classmethod
    def paper(cls, c0: float, c1: float) -> BatchLatencyModel:
        return cls(c0=c0, c_fix=0.0, c1=c1)

    def shift(self, k: int) -> float:
        if self.table is not None:
            return self._row(k)[0]
        return self.c0

    def scale(self, k: int) -> float:
        s = self._row(k)[1] if self.table is not None else self.c_fix + self.c1 * k
        if not s > 0:
            raise ValueError(f"batch model slope s_{k} must be positive, got {s}")
        return s

    def g(self, k: int, solo_ms: ArrayLike) -> FloatArray:
        """The batch time of k requests padded to `solo_ms` (vectorised)."""
        return self.shift(k) + self.scale(k) * np.asarray(solo_ms, dtype=np.float64)

    def scaled(self, factor: float) -> BatchLatencyModel:
        """Every batch `factor` times as long (a machine running slower or faster)."""
        if not factor > 0:
            raise ValueError(f"a batch model scale must be positive, got {factor}")
        if self.table is not None:
            rows = {k: (a * factor, s * factor) for k, (a, s) in self.table.items()}
            return BatchLatencyModel(table=rows)
        return BatchLatencyModel(
            c0=self.c0 * factor, c_fix=self.c_fix * factor, c1=self.c1 * factor
        )

    def corrected(
        self, sizes: Sequence[int], factor: float, per_size: Mapping[int, float]
    ) -> BatchLatencyModel:
        """A table over `sizes`: row k is g_k times `factor` times `per_size[k]` (1 if absent),
        then made non-decreasing in k (a_k and s_k both), since nested viable sets need a
        bigger batch never to be predicted faster, and per-size noise can break that."""
        if not factor > 0 or any(not f > 0 for f in per_size.values()):
            raise ValueError(f"batch model scales must be positive, got {factor}, {per_size}")
        ks = sorted(sizes)
        f = np.array([factor * per_size.get(k, 1.0) for k in ks])
        a = np.maximum.accumulate(np.array([self.shift(k) for k in ks]) * f)
        s = np.maximum.accumulate(np.array([self.scale(k) for k in ks]) * f)
        return BatchLatencyModel(
            table={k: (float(ak), float(sk)) for k, ak, sk in zip(ks, a, s, strict=True)}
        )

    def _row(self, k: int) -> tuple[float, float]:
        assert self.table is not None
        if k not in self.table:
            raise ValueError(f"batch model table has no row for batch size {k}")
        return self.table[k]


def fit_batch_model(
    k: ArrayLike, max_solo: ArrayLike, batch_ms: ArrayLike, form: FitForm = "affine"
) -> BatchLatencyModel:
    """Least squares over measured batches: size k, slowest member's solo time, batch time.

    `affine` fits (c0, c_fix, c1), `paper` fits (c0, c1) with c_fix = 0, and `table` fits
    (a_k, s_k) for each batch size separately (it needs two distinct max_solo per size).
    """
    ks = np.asarray(k, dtype=np.float64)
    ls = np.asarray(max_solo, dtype=np.float64)
    ys = np.asarray(batch_ms, dtype=np.float64)
    if not ks.shape == ls.shape == ys.shape or ks.size < 2:
        raise ValueError("k, max_solo and batch_ms need the same length, at least 2")
    if form == "table":
        table = {}
        for kk in np.unique(ks):
            sel = ks == kk
            if np.unique(ls[sel]).size < 2:
                raise ValueError(f"batch size {int(kk)} needs two distinct max_solo values")
            design = np.column_stack([np.ones(sel.sum()), ls[sel]])
            (a, s), *_ = np.linalg.lstsq(design, ys[sel], rcond=None)
            table[int(kk)] = (float(a), float(s))
        return BatchLatencyModel(table=table)
    if form == "paper":
        design = np.column_stack([np.ones_like(ks), ks * ls])
        (c0, c1), *_ = np.linalg.lstsq(design, ys, rcond=None)
        return BatchLatencyModel(c0=max(float(c0), 0.0), c_fix=0.0, c1=max(float(c1), 0.0))
    design = np.column_stack([np.ones_like(ks), ls, ks * ls])
    (c0, c_fix, c1), *_ = np.linalg.lstsq(design, ys, rcond=None)
    return BatchLatencyModel(
        c0=max(float(c0), 0.0), c_fix=max(float(c_fix), 0.0), c1=max(float(c1), 0.0)
    )


# -- the maximum of independent members -------------------------------------------------------
def _check_grid(factors: Factors) -> FloatArray:
    if not factors or any(n < 0 for _, n in factors) or sum(n for _, n in factors) < 1:
        raise ValueError("a batch needs at least one member")
    edges = factors[0][0].edges
    if not all(h.same_grid(edges) for h, _ in factors):
        raise ValueError("batch members must share the model grid")
    return edges


# (histogram, exponent, Gauss-Legendre points or 0 for the edges) -> that power of its CDF
Powers = dict[tuple[int, int, int], FloatArray]


def _edge_power(h: Histogram, n: int, memo: Powers | None) -> FloatArray:
    """F^n at the grid edges; `memo` keeps it for the other rows of one `batch_dists`."""
    if memo is None:
        return h.cum**n
    key = (id(h), n, 0)
    if key not in memo:
        memo[key] = h.cum**n
    return memo[key]


def _cell_power(h: Histogram, n: int, u: FloatArray, memo: Powers | None) -> FloatArray:
    """F^n at the points `u` inside every cell (F is linear there)."""
    if memo is None:
        return (h.cum[:-1, None] + h.masses[:, None] * u[None, :]) ** n
    key = (id(h), n, u.size)
    if key not in memo:
        memo[key] = (h.cum[:-1, None] + h.masses[:, None] * u[None, :]) ** n
    return memo[key]


def max_cum(factors: Factors, memo: Powers | None = None) -> FloatArray:
    """CDF of the max at the grid edges: Π_i F_i (exact there)."""
    _check_grid(factors)
    out = np.ones_like(factors[0][0].cum)
    for h, n in factors:
        out = out * _edge_power(h, n, memo)
    return out


def max_histogram(factors: Factors, memo: Powers | None = None) -> Histogram:
    """The max's histogram on the shared grid (masses exact; uniform inside a bin)."""
    edges = _check_grid(factors)
    return Histogram(edges, np.diff(max_cum(factors, memo)))


@lru_cache(maxsize=64)
def _gauss_legendre(n: int) -> tuple[FloatArray, FloatArray]:
    """n nodes mapped to [0, 1] (positions inside a cell) and their weights; computing them
    was a third of a table rebuild before they were cached."""
    nodes, weights = np.polynomial.legendre.leggauss(n)
    u, w = 0.5 * (nodes + 1.0), weights
    u.flags.writeable = w.flags.writeable = False
    return u, w


def expected_max(factors: Factors, memo: Powers | None = None) -> float:
    """E[max] = e_0 + ∫(1 − Π F_i), exact per cell by Gauss–Legendre (F_i linear in a cell).

    `memo` holds powers of the members' CDFs while the histograms it names are alive (one
    `batch_dists`, where every app's row raises the mixture to the same powers)."""
    edges = _check_grid(factors)
    k = sum(n for _, n in factors)
    u, weights = _gauss_legendre(max(1, ceil((k + 1) / 2)))
    prod = np.ones((edges.size - 1, u.size))
    for h, n in factors:
        prod *= _cell_power(h, n, u, memo)
    widths = np.diff(edges)
    return float(edges[0] + np.sum(0.5 * widths * ((1.0 - prod) @ weights)))


def max_pdf_product(cdfs: FloatArray, pdfs: FloatArray) -> FloatArray:
    """d/dl Π F_i = Σ_i f_i Π_{j≠i} F_j, from values (k, points) of F_i and f_i."""
    k = cdfs.shape[0]
    out = np.zeros(cdfs.shape[1])
    for i in range(k):
        others = np.prod(np.delete(cdfs, i, axis=0), axis=0)
        out += pdfs[i] * others
    return out


def max_pdf_eq48(cdfs: FloatArray, pdfs: FloatArray) -> FloatArray:
    """Eq 4.8 literally (Özbey et al.): exponential in k, for tests only (k ≤ 8)."""
    k = cdfs.shape[0]
    if k > 8:
        raise ValueError("Eq 4.8 is O(2^k); the oracle is for k <= 8")
    out = np.zeros(cdfs.shape[1])
    for kappa in range(1, k + 1):
        coef = (-1) ** (k - kappa) * kappa**k / factorial(k)
        for subset in combinations(range(k), kappa):
            rows = list(subset)
            f_s, p_s = cdfs[rows].mean(axis=0), pdfs[rows].mean(axis=0)
            out += coef * k * f_s ** (k - 1) * p_s
    return out


# -- per-(app, batch size) batch distributions -----------------------------------------------
@dataclass(frozen=True, eq=False)
class BatchDist:
    """L_B for one (app, batch size): its histogram (mapped edges) and exact mean."""

    k: int
    hist: Histogram
    mean: float

    def estimate(self, estimator: str) -> float:
        """A point estimate of L_B: `mean`, `min` (lowest support) or `quantile:q`."""
        kind, q = parse_estimator(estimator)
        if kind == "mean":
            return self.mean
        if kind == "min":
            return self.hist.min_support
        return self.hist.quantile_at(q)


def parse_estimator(estimator: str) -> tuple[str, float]:
    if estimator in ("mean", "min"):
        return estimator, 0.0
    kind, _, q = estimator.partition(":")
    try:
        value = float(q)
    except ValueError:
        value = -1.0
    if kind != "quantile" or not 0.0 <= value <= 1.0:
        raise ValueError(
            f"drop_estimator must be mean, min or quantile:q (0<=q<=1), not {estimator!r}"
        )
    return kind, value


def batch_factors(
    key: str, k: int, hists: Mapping[str, Histogram], mix: Histogram, mode: BatchMode
) -> list[tuple[Histogram, int]]:
    """Which member distributions fill a batch of k holding a request keyed `key`."""
    if mode == "mixture" or (mode == "own+mixture" and key not in hists):
        return [(mix, k)]
    if mode == "own+mixture":
        return [(hists[key], 1), (mix, k - 1)]
    apps = sorted(hists)  # cyclic: slot i gets app i mod m, the same for every request
    counts = [len(range(i, k, len(apps))) for i in range(len(apps))]
    return [(hists[a], n) for a, n in zip(apps, counts, strict=True) if n > 0]


def batch_dists(
    hists: Mapping[str, Histogram],
    weights: Mapping[str, float],
    model: BatchLatencyModel,
    sizes: Sequence[int],
    mode: BatchMode = "own+mixture",
) -> dict[str, list[BatchDist]]:
    """L_B for every app (plus `MIXTURE_KEY`) and every batch size, in `sizes` order."""
    if not hists:
        raise ValueError("no app histograms")
    apps = sorted(hists)
    mix = Histogram.mixture([hists[a] for a in apps], [weights.get(a, 0.0) for a in apps])
    out: dict[str, list[BatchDist]] = {}
    memo: Powers = {}  # the histograms it is keyed by live until this returns
    for key in [*apps, MIXTURE_KEY]:
        row = []
        for k in sizes:
            factors = batch_factors(key, k, hists, mix, mode)
            a, s = model.shift(k), model.scale(k)
            hist = max_histogram(factors, memo).affine(a, s)
            row.append(BatchDist(k, hist, a + s * expected_max(factors, memo)))
        out[key] = row
    return out
